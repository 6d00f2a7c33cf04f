"""The sweep's decisions with a fake runner: plateau stop, confirmations, failures, constraints.

No process is started: FakeRunner draws each launch from a known noise model, so
these tests check the loop's logic (what is launched, when it stops, what it says).
"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from tests.fakes import FakeRunner
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report

SPACE = {
    "study": "d",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL128", "Simple"]},
        "MIN": {"env": "NCCL_MIN_NCHANNELS", "choices": ["default", 4, 16]},
        "MAX": {"env": "NCCL_MAX_NCHANNELS", "choices": ["default", 8, 32]},
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
    },
    "constraints": ["MIN <= MAX"],
    "stop": {"patience": 6, "min_gain": 0.01, "baseline_launches": 2, "confirmations": 1},
}


def _sweep(tmp_path: Path, speed, *, trials: int = 20, seed: int = 0, space=None, **kw):  # type: ignore[no-untyped-def]
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(space or SPACE))
    storage = f"sqlite:///{tmp_path}/d.db"
    runner = FakeRunner(Store(storage), "d", speed=speed, seed=seed, **kw)
    result = run_sweep(
        load_space(path), RunRequest(storage, trials, seed=seed), Seams(runner=runner)
    )
    return result, runner, storage


def test_nothing_matters_stops_on_a_plateau_and_keeps_the_defaults(tmp_path: Path) -> None:
    result, runner, storage = _sweep(tmp_path, lambda p: 100.0)
    assert result.stop_reason == "plateau"
    assert "no configuration beat trial 0 by more than the noise" in result.stop_detail
    # The plateau after a final comparison of the best-looking change (its launches could
    # not rule out a gain worth deploying): not settled or no gain, the defaults either way.
    assert result.launched <= 20 and any(role == "final" for role, _ in runner.launched)
    assert [r for r, _ in runner.launched[:2]] == ["baseline", "baseline"]
    assert runner.launched[0][1] == {}
    answer = best_report(storage, "d")
    assert answer.keep_defaults is True
    assert answer.noise is not None and answer.noise.n_configs >= 1


def test_a_real_gain_is_confirmed_then_recommended(tmp_path: Path) -> None:
    result, runner, storage = _sweep(
        tmp_path, lambda p: 108.0 if p["NCCL_PROTO"] == "LL" else 100.0, trials=30
    )
    confirms = [changed for role, changed in runner.launched if role == "confirm"]
    assert any(c.get("NCCL_PROTO") == "LL" for c in confirms)
    answer = best_report(storage, "d")
    assert answer.keep_defaults is False
    assert answer.recommended.env.get("NCCL_PROTO") == "LL"
    # The simplest winner: the extra knobs that do nothing are not recommended.
    assert answer.recommended.launches >= 2


def test_every_launch_failing_stops_early_with_all_failed(tmp_path: Path) -> None:
    result, runner, storage = _sweep(tmp_path, lambda p: 100.0, fail=lambda p: "exit 1: boom")
    assert result.stop_reason == "all_failed"
    assert len(runner.launched) == 2
    study = optuna.load_study(study_name="d", storage=storage)
    assert {t.user_attrs["tuner_reason"] for t in study.trials} == {"exit 1: boom"}


@pytest.mark.parametrize("method", ["local", "tpe"])
def test_constraint_breaking_proposals_are_never_launched(tmp_path: Path, method: str) -> None:
    space = {**SPACE, "search": {"method": method}}
    _, runner, storage = _sweep(tmp_path, lambda p: 100.0, trials=12, space=space)
    for _, changed in runner.launched:
        if "MIN" in changed and "MAX" in changed:
            assert int(changed["MIN"]) <= int(changed["MAX"])
    study = optuna.load_study(study_name="d", storage=storage)
    not_launched = [t for t in study.trials if t.user_attrs.get("tuner_launched") is False]
    for t in not_launched:
        assert "not launched" in t.user_attrs["tuner_reason"]


@pytest.mark.parametrize("seed", [1, 2])
def test_resume_continues_to_the_total_budget(tmp_path: Path, seed: int) -> None:
    slow = {"stop": {**SPACE["stop"], "patience": 50}}
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump({**SPACE, **slow}))
    storage = f"sqlite:///{tmp_path}/d.db"
    # Nothing matters: the launches kept for a final comparison that never comes go to the
    # search, so --trials 8 makes 8 launches, and a resume to 11 makes 3 more.
    first = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seed=seed)
    run_sweep(load_space(path), RunRequest(storage, 8, seed=seed), Seams(runner=first))
    second = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seed=seed + 10)
    result = run_sweep(load_space(path), RunRequest(storage, 11, seed=seed), Seams(runner=second))
    # (A change that looks better late keeps the last launches for its comparison: the
    # answer then says "not settled" and names the --trials that would hold it.)
    assert len(first.launched) == 8 and 1 <= len(second.launched) <= 3
    assert result.launched == 8 + len(second.launched)
    assert result.stop_detail.startswith("used the budget of 11 launches")
    assert not any(role == "baseline" for role, _ in second.launched)


def test_a_budget_too_small_for_a_final_comparison_makes_the_launches_asked_for(
    tmp_path: Path,
) -> None:
    # 2 baselines + 4 search launches: no room for 2 x 2 final launches after a search
    # launch, so no reserve is kept; a gain found cannot be the answer, and it says why.
    result, runner, storage = _sweep(
        tmp_path, lambda p: 110.0 if p["NCCL_PROTO"] == "LL" else 100.0, trials=6
    )
    assert result.launched == 6 and len(runner.launched) == 6
    assert not any(role == "final" for role, _ in runner.launched)
    report = best_report(storage, "d")
    assert report.keep_defaults is True
    assert "the final comparison did not run" in (report.recommended.reason or "")


def test_search_trials_say_who_proposed_them(tmp_path: Path) -> None:
    _, _, storage = _sweep(tmp_path, lambda p: 100.0, trials=10)
    study = optuna.load_study(study_name="d", storage=storage)
    search = [t for t in study.trials if t.user_attrs.get("tuner_role") == "search"]
    assert search and {t.user_attrs["tuner_proposer"] for t in search} == {"local"}
    tpe = {**SPACE, "search": {"method": "tpe"}}
    (tmp_path / "tpe").mkdir()
    _, _, storage = _sweep(tmp_path / "tpe", lambda p: 100.0, trials=10, space=tpe)
    study = optuna.load_study(study_name="d", storage=storage)
    search = [t for t in study.trials if t.user_attrs.get("tuner_role") == "search"]
    assert search and {t.user_attrs["tuner_proposer"] for t in search} == {"tpe"}


def _three_knobs(p: dict) -> float:
    """Three settings that each give 3%; every other one does nothing."""
    hits = (p["NCCL_PROTO"] == "LL128") + (str(p["MAX"]) == "32") + (str(p["compilation"]) == "3")
    return 100.0 * 1.03**hits


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_gain_spread_over_three_settings_is_found_and_recommended_alone(
    tmp_path: Path, seed: int
) -> None:
    result, runner, storage = _sweep(
        tmp_path, _three_knobs, trials=30, seed=seed, between=0.003, within=0.003
    )
    answer = best_report(storage, "d")
    changed = {k: str(v) for k, v in answer.recommended.changed.items()}
    assert changed == {"NCCL_PROTO": "LL128", "MAX": "32", "compilation": "3"}
    assert result.launched <= 30
    # Proposals changed the incumbent a few settings at a time, never more than allowed.
    assert all(len(c) <= 4 for role, c in runner.launched if role == "search")


def test_the_plateau_waits_for_a_pending_confirmation_then_drops_passengers(
    tmp_path: Path,
) -> None:
    # Patience 1: the first search trial is also the last before the plateau. It looks
    # better, so its confirmation must run before the sweep stops; and since it set two
    # values at once, the simpler form without the idle one is launched before the answer.
    space = {
        **SPACE,
        "params": {
            "P": {"env": "P", "choices": ["default", "good"]},
            "Q": {"env": "Q", "choices": ["default", "idle"]},
        },
        "constraints": [],
        "stop": {**SPACE["stop"], "patience": 1},
    }
    result, runner, storage = _sweep(
        tmp_path,
        lambda p: 105.0 if p["P"] == "good" else 100.0,
        space=space,
        between=0.002,
        within=0.002,
    )
    roles = [role for role, _ in runner.launched]
    assert roles[:4] == ["baseline", "baseline", "search", "confirm"]
    assert runner.launched[2][1] == {"P": "good", "Q": "idle"}
    assert ("simplify", {"P": "good"}) in runner.launched or ("search", {"P": "good"}) in (
        runner.launched
    )
    assert result.stop_reason == "plateau"
    answer = best_report(storage, "d")
    assert answer.keep_defaults is False
    assert answer.recommended.changed == {"P": "good"}
    # Every launch queued under a claim carries it, and it is the claim won for it.
    study = optuna.load_study(study_name="d", storage=storage)
    claimed = [t for t in study.trials if t.user_attrs[attrs.ROLE] != attrs.SEARCH]
    assert {t.user_attrs[attrs.ROLE] for t in claimed} >= {"baseline", "confirm"}
    store = Store(storage)
    for trial in claimed:
        kind, key = trial.user_attrs[attrs.CLAIM].split(":", 1)
        assert kind == trial.user_attrs[attrs.ROLE]
        assert key in store.claimed("d", kind)
    assert [t.user_attrs[attrs.CLAIM] for t in claimed[:2]] == ["baseline:0", "baseline:1"]


class TerminatedOnLaunch(FakeRunner):
    """A FakeRunner that gets SIGTERM (as the real runner sees it) during launch ``at``."""

    def __init__(self, *args, at: int, **kw):  # type: ignore[no-untyped-def]
        super().__init__(*args, **kw)
        self.at = at

    def run(self, **kw):  # type: ignore[no-untyped-def]
        import signal

        from tuner.errors import Terminated

        if len(self.launched) == self.at:
            self.launched.append((kw["role"], dict(kw["settings"].changed)))
            raise Terminated(signal.SIGTERM)
        return super().run(**kw)


def test_sigterm_fails_the_trial_records_the_stop_and_goes_on(tmp_path: Path) -> None:
    from tuner.errors import Terminated

    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    storage = f"sqlite:///{tmp_path}/d.db"
    runner = TerminatedOnLaunch(Store(storage), "d", speed=lambda p: 100.0, at=2)
    with pytest.raises(Terminated):
        run_sweep(load_space(path), RunRequest(storage, 10, seed=0), Seams(runner=runner))
    study = optuna.load_study(study_name="d", storage=storage)
    last = study.trials[-1]
    assert last.state.name == "FAIL"
    assert last.user_attrs["tuner_reason"] == "terminated by signal (SIGTERM)"
    assert study.user_attrs["stop_reason"] == "terminated"
    row = Store(storage).study("d")
    assert row is not None and row.stop_reason == "terminated"
    assert row.stop_detail == "stopped by SIGTERM; run the same command to resume"
    # The same command resumes: nothing is left RUNNING, the terminated launch runs again
    # first, and it is not charged to the budget: 8 launches run to the end in all.
    assert not [t for t in study.trials if t.state.name == "RUNNING"]
    assert last.user_attrs["tuner_interrupted"] is True
    cut = (last.user_attrs["tuner_role"], {
        k: v for k, v in last.user_attrs["tuner_params"].items() if v != "default"
    })  # fmt: skip
    again = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seed=1)
    result = run_sweep(load_space(path), RunRequest(storage, 8, seed=0), Seams(runner=again))
    assert again.launched[0] == cut
    # The 2 baselines before the signal and this run's launches (it may settle earlier).
    assert result.launched == 2 + len(again.launched) <= 8
    retry = optuna.load_study(study_name="d", storage=storage).trials[last.number + 1]
    assert retry.user_attrs["tuner_retry_of"] == last.number


def test_a_resumed_run_tells_the_live_view_its_launches_and_pace(tmp_path: Path) -> None:
    from typing import Any

    from tuner.events import SweepObserver

    class Resumed(SweepObserver):
        def __init__(self) -> None:
            self.seen: list[tuple[int, Any]] = []

        def resumed(self, launches_done: int, plan: Any) -> None:
            self.seen.append((launches_done, plan))

    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    storage = f"sqlite:///{tmp_path}/d.db"
    first = Resumed()
    runner = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seed=0)
    run_sweep(
        load_space(path), RunRequest(storage, 4, seed=0), Seams(observer=first, runner=runner)
    )
    assert first.seen == []  # a new study: nothing to carry on
    again = Resumed()
    runner = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seed=1)
    run_sweep(
        load_space(path), RunRequest(storage, 6, seed=0), Seams(observer=again, runner=runner)
    )
    ((done, plan),) = again.seen
    assert done == 4 and plan is not None  # the plan, worked out again from the launches
