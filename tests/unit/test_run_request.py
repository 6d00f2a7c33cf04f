"""tuner/study/run/request.py: `tuner run`'s options as one value, built once, passed down whole.

The CLI builds the ``RunRequest`` from its options and hands it to the console unchanged;
the sweep reads its budgets, seed and runs folder from it (a fake runner launches nothing,
so the checks are on what the study records).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.fakes import FakeRunner
from tests.integration.sweep_helpers import write_space
from tuner import cli, exit_codes
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import SweepOutcome, run_sweep
from tuner.views import console as console_module


def test_tuner_run_builds_one_request_from_every_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Path, RunRequest]] = []

    def fake(space: Path, request: RunRequest, console: Console) -> SweepOutcome:
        seen.append((space, request))
        return SweepOutcome("mine", "plateau", "done", launched=3)

    monkeypatch.setattr(console_module, "run_with_console", fake)
    args = ["run", "--space", "s.yaml", "--trials", "7", "--hours", "1.5"]
    args += ["--worker-trials", "3", "--split-by-host", "--storage", "sqlite:///x.db"]
    args += ["--study", "mine", "--seed", "4", "--runs-dir", str(tmp_path / "runs")]
    done = CliRunner().invoke(cli.app, args, env={"COLUMNS": "200"})
    assert done.exit_code == exit_codes.OK, done.stdout + done.stderr
    assert seen == [
        (
            Path("s.yaml"),
            RunRequest(
                storage="sqlite:///x.db",
                trials=7,
                seed=4,
                study="mine",
                worker_trials=3,
                split_by_host=True,
                hours=1.5,
                runs_dir=tmp_path / "runs",
            ),
        )
    ]


def test_the_request_names_the_study_and_the_runners_folder(tmp_path: Path) -> None:
    space = load_space(write_space(tmp_path))
    assert RunRequest("sqlite://", 2).named(space) is space  # no --study: the space's own
    assert RunRequest("sqlite://", 2, study="other").named(space).study_name == "other"
    assert RunRequest("sqlite://", 2, runs_dir=tmp_path).runner_options().runs_dir == tmp_path


def test_the_sweep_runs_to_the_requests_budget_with_its_seed(tmp_path: Path) -> None:
    path = write_space(tmp_path)
    storage = f"sqlite:///{tmp_path}/r.db"
    launched: list[Any] = []
    for name in ("first", "second"):
        request = RunRequest(storage, 4, seed=3, study=name)
        runner = FakeRunner(Store(storage), name, speed=lambda p: 100.0, seed=3)
        result = run_sweep(request.named(load_space(path)), request, Seams(runner=runner))
        assert result.study_name == name and result.launched == len(runner.launched) == 4
        assert result.stop_reason == "budget"  # --trials 4, as the request says
        launched.append(runner.launched)
    assert launched[0] == launched[1]  # the same seed, the same launches
    trials = optuna.load_study(study_name="first", storage=storage).trials
    assert sum(1 for t in trials if t.user_attrs.get("tuner_launched")) == len(launched[0])
