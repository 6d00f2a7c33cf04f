"""One worker's stop of the study reaches the others; local stops do not (tuner/study/run/peers.py
marks it, tuner/study/policy/stops.py ``peer_stop`` reads it)."""

from __future__ import annotations

import optuna

from tuner.study import attrs
from tuner.study.policy.snapshot import Snapshot
from tuner.study.policy.stops import peer_stop
from tuner.study.run import peers
from tuner.study.state import StudyState, TrialView


def _study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna.create_study(direction="maximize")


def _stop(study: optuna.Study, seen: str | None) -> tuple[str, str] | None:
    found = peer_stop(StudyState.from_attrs(study.user_attrs), seen)
    return None if found is None else (found.reason, found.detail)


def test_a_plateau_found_by_one_worker_stops_the_others() -> None:
    study = _study()
    seen_at_start = study.user_attrs.get(attrs.STOPPED_BY)
    assert _stop(study, seen_at_start) is None
    study.set_user_attr(attrs.STOP_REASON, "plateau")
    study.set_user_attr(attrs.STOP_DETAIL, "no configuration beat trial 3 in 8 trials")
    mark = peers.mark_stop(study, "plateau", "gpu-a:1:1")
    assert mark == "gpu-a:1:1#0"
    assert _stop(study, mark) is None  # the worker that stopped it
    assert _stop(study, seen_at_start) == (
        "plateau",
        "no configuration beat trial 3 in 8 trials (stopped by worker gpu-a:1:1)",
    )
    found = peer_stop(StudyState.from_attrs(study.user_attrs), seen_at_start)
    assert found is not None and not found.whole_study  # this worker stops; it records nothing


def test_ctrl_c_or_a_signal_stops_one_worker_only() -> None:
    study = _study()
    for reason in ("interrupted", "terminated"):
        assert peers.mark_stop(study, reason, "gpu-a:1:1") is None
    assert _stop(study, None) is None


def test_launches_are_counted_per_worker() -> None:
    trials = [
        TrialView(0, "COMPLETE", launched=True, worker="a"),
        TrialView(1, "COMPLETE", launched=True, worker="a"),
        TrialView(2, "COMPLETE", launched=True, worker="b"),
        TrialView(3, "PRUNED", launched=False, worker="a"),
        TrialView(4, "RUNNING", launched=True, worker="a"),  # not run to the end yet
    ]
    snap = Snapshot(spec=None, facts=None, state=StudyState(), trials=tuple(trials), budget=9)  # type: ignore[arg-type]
    assert snap.launched_by("a") == 2
    assert snap.launched_by("b") == 1
    assert snap.launched == 3
