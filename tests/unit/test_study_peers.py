"""tuner.study.peers: one worker's stop of the study reaches the others; local stops do not."""

from __future__ import annotations

import optuna

from tuner.study import attrs, peers


def _study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna.create_study(direction="maximize")


def test_a_plateau_found_by_one_worker_stops_the_others() -> None:
    study = _study()
    seen_at_start = study.user_attrs.get(attrs.STOPPED_BY)
    assert peers.stopped_by_peer(study, seen_at_start) is None
    study.set_user_attr(attrs.STOP_REASON, "plateau")
    study.set_user_attr(attrs.STOP_DETAIL, "no configuration beat trial 3 in 8 trials")
    mark = peers.mark_stop(study, "plateau", "gpu-a:1:1")
    assert mark == "gpu-a:1:1#0"
    assert peers.stopped_by_peer(study, mark) is None  # the worker that stopped it
    assert peers.stopped_by_peer(study, seen_at_start) == (
        "plateau",
        "no configuration beat trial 3 in 8 trials (stopped by worker gpu-a:1:1)",
    )


def test_ctrl_c_or_a_signal_stops_one_worker_only() -> None:
    study = _study()
    for reason in ("interrupted", "terminated"):
        assert peers.mark_stop(study, reason, "gpu-a:1:1") is None
    assert peers.stopped_by_peer(study, None) is None


def test_launches_are_counted_per_worker() -> None:
    study = _study()
    for worker, launched in [("a", True), ("a", True), ("b", True), ("a", False)]:
        trial = study.ask()
        trial.set_user_attr(attrs.WORKER, worker)
        trial.set_user_attr(attrs.LAUNCHED, launched)
        study.tell(trial, 1.0)
    running = study.ask()
    running.set_user_attr(attrs.WORKER, "a")
    running.set_user_attr(attrs.LAUNCHED, True)
    assert peers.launched_by(study, "a") == 2
    assert peers.launched_by(study, "b") == 1
