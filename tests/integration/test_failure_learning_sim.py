"""A short study on `tuner sim --profile memory-tight`: launches that run out of memory after
the load teach the search, and `tuner trials` says what they taught.

--max-num-seqs 512 and 1024 never start on that profile (CUDA out of memory during graph
capture at the default --gpu-memory-utilization; docs/simulator.md, "memory-tight"), and
NCCL_PROTO=LL is 5% faster. The search meets the failing values (it tries every untried
value before the budget's end: three values, 12 launches),
each failure is recorded with its cause, and no launch after a refusal holds what it
refused (tuner/study/policy/failed_before.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml

from tuner.space.spec import load_space
from tuner.study import attrs
from tuner.study.policy.failed_before import lessons, values_of
from tuner.study.run.reader import trial_views
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SIM = [
    "{python}", "-m", "tuner.sim", "--profile", "memory-tight", "--load-seconds", "0.2",
    "--time-scale", "0.05", "--host", "127.0.0.1", "--port", "{port}",
]  # fmt: skip
MEMORY = {"oom_graph_capture", "oom_kv_cache", "oom_load"}


def _space(tmp_path: Path) -> Path:
    space = {
        "study": "memory",
        "server": {"command": SIM, "startup_timeout_s": 30, "stop_timeout_s": 5},
        "params": {
            "max_num_seqs": {
                "args": ["--max-num-seqs", "{value}"],
                # Both changes of it fail, so any search launch that moves it meets a
                # failure, whichever path the noise of a busy machine sends the search down.
                "choices": ["default", 512, 1024],
            },
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL"]},
        },
        "benchmark": {
            "prompt_tokens": 8,
            "max_tokens": 16,
            "concurrency": [1],
            "requests": 2,
            "warmup": 0,
            "rounds": 2,
        },
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": {"baseline_launches": 2, "patience": 4, "min_gain": 0.01, "confirmations": 1},
    }
    path = tmp_path / "memory.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def test_failed_launches_teach_the_search_and_tuner_trials_says_so(tmp_path: Path) -> None:
    path = _space(tmp_path)
    storage = f"sqlite:///{tmp_path}/e.db"
    run_sweep(load_space(path), RunRequest(storage, 12, seed=5, preflight=False))
    study = optuna.load_study(study_name="memory", storage=storage)
    views = trial_views(study)
    failed = [t for t in views if t.state == "FAIL"]
    assert failed and all(t.cause in MEMORY for t in failed), [(t.number, t.cause) for t in failed]
    assert {
        values_of(t.params) & {("max_num_seqs", "512"), ("max_num_seqs", "1024")} for t in failed
    }
    found = lessons(views)
    assert found.refused
    for refused in found.refused:
        later = [t for t in views if t.launched and t.number > refused.learned_at and t.params]
        assert not any(refused.values <= values_of(t.params) for t in later), refused
    # every failure recorded its cause, which the trial's line says before its reason
    reasons = [t.user_attrs.get(attrs.REASON, "") for t in study.trials if t.state.name == "FAIL"]
    assert all("before it was healthy" in r for r in reasons)

    out = _tuner(tmp_path, "trials", storage)
    assert "CUDA out of memory during graph capture" in out
    assert f"Failed launches: {len(failed)} (" in out
    for refused in found.refused:
        assert f"Learned: {refused.sentence()}." in out
    # `tuner best` says the same after its trial counts, the report above its failures table
    best = _tuner(tmp_path, "best", storage)
    assert best.index("Trials: ") < best.index(f"Failed launches: {len(failed)} (")
    assert all(f"Learned: {refused.sentence()}." in best for refused in found.refused)
    _tuner(tmp_path, "report", storage, "--out", str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text()
    assert html.index('<ul id="failures-taught">') < html.index('<table id="failure-table">')
    assert "<th>cause</th>" in html and ">CUDA out of memory during graph capture<" in html


def _tuner(cwd: Path, command: str, storage: str, *more: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tuner", command, "--storage", storage, "--study", "memory", *more],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode in (0, 5), done.stderr  # 5: `tuner best` without a gain to deploy
    return done.stdout
