"""A screened study on `tuner sim` (issue 24): screening searches, full launches decide.

The sim's speculative decoding helps on real weights and hurts on dummy ones
(docs/simulator.md): a study that screened it would throw the gain away. tuner launches a
configuration with ``--speculative-config`` at full fidelity only, and recommends it on
the final comparison's full launches. Screening launches run screening.benchmark's rounds,
full ones the benchmark's.
"""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from tests.integration.sweep_helpers import run_tuner, tuner_in_process, write_space
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.run.plan_launch import said_plan
from tuner.views.plan_text import plan_lines

pytestmark = pytest.mark.integration

DRAFTS = {
    "args": ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": {value}}'],
    "choices": ["default", 3],
}


def test_speculative_decoding_is_launched_full_only_and_recommended(tmp_path: Path) -> None:
    path = write_space(
        tmp_path,
        "screened",
        params={"drafts": DRAFTS},
        # Screening launches run 2 of the benchmark's 3 rounds (screening.benchmark).
        screening={"args": ["--load-format", "dummy"], "benchmark": {"rounds": 2}},
        stop={"baseline_launches": 2, "patience": 3},
        # Enough tokens a round that the sim's step noise leaves its +19% clear on 2+2 launches.
        benchmark={"requests": 4, "max_tokens": 48, "rounds": 3},
    )
    run = run_tuner("run", "--space", str(path), "--trials", "12", "--seed", "1", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    # The sweep prints the cost plan's summary: both kinds of launch, --trials in full loads.
    said = " ".join(run.stdout.split())
    assert "screening + " in said and "--trials 12 (full loads)" in said, run.stdout
    assert "what would lower them" not in said  # the whole arithmetic is the report's
    # The whole plan (the report's): both kinds of launch, their loads phase by phase, the
    # hours without screening.
    storage = f"sqlite:///{tmp_path}/experiments.db"
    optuna_study = optuna.load_study(study_name="screened", storage=storage)
    plan = said_plan(
        Store(storage), load_space(path), Store(storage).launches("screened"),
        optuna_study.user_attrs[attrs.PLAN],
    )  # fmt: skip
    assert plan is not None
    whole = " ".join(" ".join(plan_lines(plan)).split())
    assert "a screening launch saves" in whole, whole
    assert "a load: full load" in whole and "weights" in whole, whole
    assert "without screening (every launch a full load)" in whole
    rows = Store(storage).launches("screened")
    screening = [r for r in rows if r.fidelity == "screen"]
    full = [r for r in rows if r.fidelity == "full"]
    assert screening and full
    assert all(r.argv[-2:] == ["--load-format", "dummy"] for r in screening)
    assert not any("--load-format" in r.argv for r in full)
    done = [r for r in rows if r.status == "complete"]
    assert {r.rounds_done for r in done if r.fidelity == "screen"} == {2}
    assert {r.rounds_done for r in done if r.fidelity == "full"} == {3}
    drafted = [r for r in rows if str(r.params.get("drafts")) == "3"]
    assert drafted and all(r.fidelity == "full" for r in drafted)
    assert len(full) <= 12  # --trials counts full loads
    best = tuner_in_process("best", "--space", str(path), "--format", "json", cwd=tmp_path)
    answer = json.loads(best.stdout)
    # On a miss, the run's own account says which launch went wrong.
    assert str(answer["recommended"]["params"]["drafts"]) == "3", run.stdout
    assert answer["final"]["passed"] is True
    assert answer["screening"]["full_launches"] == len([r for r in full if r.status == "complete"])
    table = tuner_in_process("best", "--space", str(path), cwd=tmp_path).stdout
    assert "Screening:" in table and "Never screened (full launches only): drafts" in table
    trials = tuner_in_process("trials", "--space", str(path), cwd=tmp_path).stdout
    assert "fidelity" in trials and "screen" in trials
