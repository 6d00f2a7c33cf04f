"""A screened study of a MoE model on `tuner sim` (issue 41): screening launches carry
VLLM_MOE_ROUTING_SIMULATION_STRATEGY=uniform_random, full ones never do, the simulator
logs vLLM's warning for it, and `tuner check` and `tuner best` say so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.sweep_helpers import FAST_SIM, run_tuner, tuner_in_process, write_space
from tuner.space.spec import SHIPPED_SPACES
from tuner.storage import Store

pytestmark = pytest.mark.integration

VAR = "VLLM_MOE_ROUTING_SIMULATION_STRATEGY"


def test_screening_launches_of_a_moe_model_simulate_the_trained_routing(tmp_path: Path) -> None:
    model = tmp_path / "Kimi-K2.5"
    model.mkdir()
    shutil.copy(SHIPPED_SPACES / "models" / "kimi-k2.5-int4" / "config.json", model)
    path = write_space(
        tmp_path,
        "moe",
        server={"command": [*FAST_SIM, "--model", str(model)], "startup_timeout_s": 30},
        params={"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]}},
        screening={"args": ["--load-format", "dummy"], "max_launches": 4},
    )
    check = run_tuner("check", "--space", str(path), cwd=tmp_path)
    assert (
        f"screening launches add {VAR}=uniform_random: Kimi-K2.5 has 384 experts and the "
        "simulator reads it as vLLM 0.32 does"
    ) in " ".join(check.stdout.split()), check.stdout + check.stderr
    run = run_tuner("run", "--space", str(path), "--trials", "3", "--seed", "1", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = Store(f"sqlite:///{tmp_path}/experiments.db").launches("moe")
    screen = [r for r in rows if r.fidelity == "screen"]
    full = [r for r in rows if r.fidelity == "full"]
    assert screen and full
    assert all(r.env.get(VAR) == "uniform_random" for r in screen)
    assert not any(VAR in r.env for r in full)
    log = Path(screen[0].log_path or "").read_text()
    assert "Simulating MoE routing using a uniform_random strategy." in log
    best = " ".join(tuner_in_process("best", "--space", str(path), cwd=tmp_path).stdout.split())
    assert (
        f"Screening routing: all {len(screen)} screening launches ran with {VAR}=uniform_random"
    ) in best, best
