"""`tuner check --plan` against `tuner sim`: one real baseline launch, then the cost plan."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.sweep_helpers import run_tuner, write_space
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _tuner(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tuner(*args, cwd=cwd)


def test_check_plan_launches_the_defaults_once_and_records_nothing(tmp_path: Path) -> None:
    space = write_space(tmp_path, stop={"baseline_launches": 2, "patience": 8})
    storage = f"sqlite:///{tmp_path}/x.db"
    done = _tuner("check", "--space", str(space), "--storage", storage, "--plan", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "launching the defaults once" in out
    assert "cost plan after 1 baseline launch:" in out
    assert "assumed until two exist" in out
    assert "smallest gain the search can see:" in out
    assert "this study cannot confirm gains below" in out
    assert "10 launches to keep the defaults (2 baseline + 8 search" in out
    assert "s to healthy" in out  # timed from the real launch
    assert "what would lower them:" in out  # the whole plan, not the sweep's five lines
    # The launch went to a temporary database: the study in --storage has none.
    assert Store(storage).launches("fast") == []


def test_check_plan_reads_a_study_that_has_its_baseline(tmp_path: Path) -> None:
    path = write_space(tmp_path, stop={"baseline_launches": 2, "patience": 8})
    storage = f"sqlite:///{tmp_path}/x.db"
    run_sweep(load_space(path), RunRequest(storage, 2, preflight=False))
    done = _tuner(
        "check", "--space", str(path), "--storage", storage, "--plan", "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    plan = json.loads(done.stdout)["plan"]
    assert plan["noise"]["n_launches"] == 2 and plan["between_assumed"] is False
    assert plan["text"][0] == "cost plan after 2 baseline launches:"
    assert plan["detectable_gain"] > 0
    assert plan["seconds"]["launches_timed"] == 2
    assert "from the baseline launches of study 'fast'" in done.stderr
