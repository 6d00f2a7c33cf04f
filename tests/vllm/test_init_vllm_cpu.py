"""`tuner init` on vLLM's CPU build (issue 38): the command search_spaces/vllm-cpu.yaml runs,
given as a user would, gives a file that passes `tuner check` against vLLM's real --help,
and a short study runs on it. Needs ``bash scripts/setup-vllm-cpu.sh`` (skipped otherwise)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.sweep_helpers import run_tuner
from tests.vllm.test_vllm_cpu import MODEL, _missing, short_benchmark
from tuner.space.spec import load_space
from tuner.storage import LaunchStatus, Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(_missing() is not None, reason=_missing() or ""),
]

# What search_spaces/vllm-cpu.yaml's server.env sets, here from the environment tuner init
# and the launches inherit.
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


@pytest.mark.timeout(600)
def test_init_on_the_cpu_build_passes_check_and_a_short_study_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in OFFLINE.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
               str(MODEL), "--served-model-name", "tiny-llama"]  # fmt: skip
    init = run_tuner("init", "--", *command, cwd=tmp_path, timeout=400)
    assert init.returncode == 0, init.stdout + init.stderr
    said = " ".join(init.stdout.split())
    assert "tiny-llama.yaml: 0 error(s)" in said, said
    path = tmp_path / "tiny-llama.yaml"
    spec = load_space(path).spec
    # One CPU "device": no NCCL and no probe; vLLM's flags from its --help; screening,
    # as its --help offers --load-format dummy; the weights' few MB: 15 minutes at most.
    assert not any((p.env or "").startswith("NCCL_") for p in spec.params.values())
    assert spec.probe is None
    assert {"compilation", "enforce_eager", "max_num_seqs", "max_num_batched_tokens"} <= set(
        spec.params
    )
    assert spec.screening is not None and spec.screening.args == ["--load-format", "dummy"]
    assert spec.server.startup_timeout_s <= 900
    assert spec.server.env.get("VLLM_CACHE_ROOT") == "{study_dir}/vllm-cache/{config}"

    # A short study: the benchmark of the other vLLM tests, one baseline of each fidelity,
    # patience 1 (a screening launch or two more).
    raw = yaml.safe_load(path.read_text())
    raw["benchmark"] = short_benchmark(len(os.sched_getaffinity(0)) >= 2)
    raw["objective"] = {"metric": "output_throughput", "concurrency": 4}
    raw["stop"] = {"baseline_launches": 1, "confirmations": 0, "patience": 1, "final_launches": 1}
    raw["screening"]["patience"] = 1
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    storage = f"sqlite:///{tmp_path}/vllm.db"
    run_sweep(load_space(path), RunRequest(storage, 3, seed=7))
    launches = Store(storage).launches(raw["study"])
    assert len(launches) >= 2
    assert {("baseline", "screen"), ("baseline", "full")} <= {
        (x.role, x.fidelity) for x in launches
    }
    for launch in launches:
        assert launch.status in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED), launch.reason
