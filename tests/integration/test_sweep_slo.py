"""A sweep under a latency limit against `tuner sim --profile slo-trade`, whose answer is known.

--max-num-batched-tokens 16384 raises throughput at 64 streams by about 14% but holds new
requests back (TTFT p99 about 4x); --max-num-seqs 256 gives about 5% with TTFT unchanged
(tuner/sim/profiles.py, docs/simulator.md). Under `ttft_ms.p99@64 <= 60` the first must never
be recommended; without the limit it must be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.facts import analysis
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(300)]

LIMIT = "ttft_ms.p99@64 <= 60"  # ms at --time-scale 0.3: defaults ~20-35, the trade ~110
SLO_SIM = [
    "{python}",
    "-m",
    "tuner.sim",
    "--profile",
    "slo-trade",
    "--load-seconds",
    "0.2",
    "--time-scale",
    "0.3",
    "--host",
    "127.0.0.1",
    "--port",
    "{port}",
]
BATCHED = "max_num_batched_tokens"


def _space(tmp_path: Path, limits: list[str]) -> Path:
    """The two settings of the trade and nothing else: four configurations in all."""
    space = {
        "study": "slo",
        "server": {"command": SLO_SIM, "startup_timeout_s": 30, "stop_timeout_s": 5},
        "params": {
            BATCHED: {
                "args": ["--max-num-batched-tokens", "{value}"],
                "choices": ["default", 16384],
            },
            "max_num_seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 256]},
        },
        "benchmark": {
            "prompt_tokens": 16,
            "max_tokens": 32,
            "concurrency": [64],
            "requests": 128,
            "warmup": 0,
            "rounds": 3,
        },
        "objective": {"metric": "output_throughput", "concurrency": 64, "subject_to": limits},
        "stop": {"baseline_launches": 2, "patience": 4, "min_gain": 0.01, "confirmations": 1},
    }
    path = tmp_path / "slo.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def _sweep(tmp_path: Path, limits: list[str]) -> tuple[str, analysis.StudyAnalysis]:
    path = _space(tmp_path, limits)
    storage = f"sqlite:///{tmp_path}/e.db"
    # 15: the search (11) and the final comparison's 4 launches before a change is the answer
    run_sweep(load_space(path), RunRequest(storage, 15, seed=3, preflight=False))
    return storage, analysis.analyze(Store(storage), load_space(path))


def _best_json(tmp_path: Path, storage: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tuner", "best", "--storage", storage, "--study", "slo"]
        + ["--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_under_the_limit_the_latency_breaking_setting_is_never_recommended(
    tmp_path: Path,
) -> None:
    storage, result = _sweep(tmp_path, [LIMIT])
    tried = [c for c in result.configs.values() if c.params[BATCHED] == 16384]
    assert tried, "the search never tried the setting the limit is about"
    verdicts = [result.limit_status(config) for config in tried]
    assert "feasible" not in verdicts and "infeasible" in verdicts
    # Each launch's TTFT minus the limit is its optuna constraint, which TPE reads.
    trials = optuna.load_study(study_name="slo", storage=storage).get_trials(deepcopy=False)
    measured = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert measured and all(set(t.constraints) == {LIMIT} for t in measured)
    assert any(t.constraints[LIMIT] > 0 for t in measured)  # the trade broke it
    assert any(t.constraints[LIMIT] <= 0 for t in measured)  # the defaults did not
    answer = _best_json(tmp_path, storage)
    assert answer["recommended"]["params"][BATCHED] == "default"
    assert answer["best"]["params"][BATCHED] == "default"
    limits = answer["constraints"]
    assert limits["limits"] == [LIMIT]
    assert limits["recommended"][0]["verdict"] == "feasible"
    broken = [c for c in limits["left_out"] if c["changed"].get(BATCHED) == 16384]
    assert any(c["verdict"] == "infeasible" for c in broken)
    assert all(c["constraints"][0]["excess"] > 0.2 for c in broken)  # well past 60 ms


def test_without_the_limit_the_latency_breaking_setting_is_recommended(tmp_path: Path) -> None:
    storage, result = _sweep(tmp_path, [])
    rec = result.recommendation()
    assert rec is not None
    assert result.configs[rec.recommended].params[BATCHED] == 16384
    answer = _best_json(tmp_path, storage)
    assert answer["recommended"]["params"][BATCHED] == 16384
    assert answer["constraints"]["limits"] == []
