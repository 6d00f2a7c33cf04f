"""A small space used up: the sweep stops as exhausted once every configuration was
tried, instead of letting optuna's TPE propose repeats of measured ones (the README's
demo once listed ~36 "same configuration as trial 0; not launched again" before it).
"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from tests.fakes import FakeRunner
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.policy import exhaustion
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep

SMALL = {
    "study": "small",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
        "eager": {"args": ["--enforce-eager"], "choices": ["default", True]},
    },
    # The futility stop off: with every neighbour launched it would end the sweep first
    # (no untried neighbour is left to beat the incumbent), which is not what this tests.
    "stop": {
        "patience": 8,
        "min_gain": 0.01,
        "baseline_launches": 2,
        "confirmations": 1,
        "futility": 0,
    },
}


def _speed(params: dict[str, object]) -> float:
    return 75.0 if str(params["compilation"]) == "0" else 100.0  # -O0: a loud loser


def _run(tmp_path: Path, seed: int, **changes: object) -> tuple[object, FakeRunner, optuna.Study]:
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump({**SMALL, **changes}))
    storage = f"sqlite:///{tmp_path}/small.db"
    runner = FakeRunner(Store(storage), "small", speed=_speed, seed=seed)
    result = run_sweep(load_space(path), RunRequest(storage, 30, seed=seed), Seams(runner=runner))
    return result, runner, optuna.load_study(study_name="small", storage=storage)


def _repeats(study: optuna.Study) -> int:
    return sum(
        1 for t in study.trials if "not launched again" in str(t.user_attrs.get("tuner_reason"))
    )


@pytest.mark.parametrize("seed", range(3))
def test_the_sweep_stops_once_every_configuration_was_tried(tmp_path: Path, seed: int) -> None:
    result, runner, study = _run(tmp_path, seed)
    assert result.stop_reason == "exhausted"
    assert "every configuration of the space has been tried (6)" in result.stop_detail
    launched = {tuple(sorted(changed.items())) for _, changed in runner.launched}
    assert len(launched) == 6  # the whole grid, each measured
    assert _repeats(study) <= 2  # no run of TPE repeats before the stop


def test_without_a_grid_to_list_repeats_stop_the_sweep_soon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A grid too large to list (here: any): the local search has nothing left, TPE only
    # repeats measured configurations, and IDLE_AFTER_LOCAL of them in a row stop it.
    monkeypatch.setattr(exhaustion, "GRID_LIMIT", 1)
    result, _, study = _run(tmp_path, 0)
    assert result.stop_reason == "exhausted"
    assert "after the local search had nothing left" in result.stop_detail
    assert _repeats(study) <= exhaustion.IDLE_AFTER_LOCAL


def test_with_tpe_alone_a_used_up_grid_stops_the_sweep_at_once(tmp_path: Path) -> None:
    # search.method: tpe (as with several objectives): no local search to wait for, so
    # neither MAX_IDLE_PROPOSALS repeats nor a sentence about a local search.
    result, runner, study = _run(tmp_path, 1, search={"method": "tpe"})
    assert result.stop_reason == "exhausted"
    assert "local search" not in result.stop_detail
    assert _repeats(study) <= exhaustion.IDLE_AFTER_LOCAL
