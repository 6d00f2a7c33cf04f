"""The trial runner on a server that prints a real vLLM GPU log and dies: the launch stores the
reason of tests/unit/test_vllm_gpu_logs.py and the phases and KV cache its log gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.sweep_helpers import write_space
from tuner.errors import LaunchError
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.telemetry.gpu import NullGpuBackend
from tuner.trial.runner import RunnerOptions, TrialRunner

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FIXTURES = Path(__file__).parents[1] / "unit" / "fixtures" / "vllm_logs"


@pytest.mark.parametrize(
    ("name", "reason", "kv_cache_tokens"),
    [
        (
            "gpu_0.9_tpN_oom_graph_capture_issue19186.txt",
            "RuntimeError: CUDA error: out of memory",
            None,
        ),
        (
            "gpu_0.11_tp2_cached_compile_kv_tokens_issue28228.txt",
            # no error line: the last line that says something
            "CUDAGraphMode.FULL_AND_PIECEWISE is not supported",
            75840,
        ),
    ],
)
def test_a_launch_that_died_stores_the_reason_and_phases_of_its_log(
    tmp_path: Path, name: str, reason: str, kv_cache_tokens: int | None
) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "".join(
            line
            for line in (FIXTURES / name).read_text().splitlines(keepends=True)
            if not line.startswith("# ")
        )
    )
    # The port is the script's $1, unused: the server dies before it would listen.
    server = {"command": ["sh", "-c", f"cat {log}; exit 1", "server", "{port}"]}
    space = load_space(write_space(tmp_path, server=server))
    store = Store(f"sqlite:///{tmp_path}/gpu_logs.db")
    store.ensure_study(space.study_name, space_path=None, space_text=None)
    runner = TrialRunner(
        space,
        store,
        gpu=NullGpuBackend("no GPU"),
        options=RunnerOptions(runs_dir=tmp_path / "runs"),
    )
    settings = settings_from_params(runner.spec, {})
    with pytest.raises(LaunchError) as raised:
        runner.run(trial_id=None, trial_number=0, role="baseline", settings=settings)
    expected = "server exited with code 1 before it was healthy: " + reason
    assert raised.value.reason.startswith(expected)
    row = store.launches(space.study_name)[0]
    assert row.status == "failed" and row.reason == raised.value.reason
    if kv_cache_tokens is None:  # a log that names no phase and no KV cache stores none
        assert row.load_phases is None
    else:
        assert row.load_phases is not None
        assert row.load_phases["kv_cache_tokens"] == kv_cache_tokens
        assert row.load_phases["found"] == ["compile"] and row.load_phases["compile_cached"]
