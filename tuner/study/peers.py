"""What a worker needs to know of the study's other workers: their stops, its own share.

A stop found by any worker (plateau, futility, budget, exhausted space, every launch
failed, the probe's verdict) holds for the study: ``mark_stop`` records who stopped it
and when (``tuner_stopped_by``, ``worker#trials``), and every other worker sees the mark
change after its current trial (``stopped_by_peer``) and stops too. A stop of one worker
only (Ctrl-C, a signal, its own ``--worker-trials``) leaves the others running.
"""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from tuner.study import attrs

LOCAL_STOPS = frozenset({"interrupted", "terminated"})
"""Stops of one worker only: Ctrl-C or a signal to it does not stop the others."""


def mark_stop(study: optuna.Study, reason: str, worker: str | None) -> str | None:
    """Tell the other workers the study has stopped; the mark (None for a local stop)."""
    if reason in LOCAL_STOPS:
        return None
    marker = f"{worker or '-'}#{len(study.get_trials(deepcopy=False))}"
    study.set_user_attr(attrs.STOPPED_BY, marker)
    return marker


def stopped_by_peer(study: optuna.Study, seen: str | None) -> tuple[str, str] | None:
    """(reason, sentence) when another worker stopped the study since the mark ``seen``."""
    marker = study.user_attrs.get(attrs.STOPPED_BY)
    if marker is None or marker == seen:
        return None
    reason = str(study.user_attrs.get(attrs.STOP_REASON, "stopped"))
    detail = str(study.user_attrs.get(attrs.STOP_DETAIL, ""))
    who = str(marker).rsplit("#", 1)[0]
    return reason, f"{detail} (stopped by worker {who})"


def launched_by(study: optuna.Study, worker: str | None) -> int:
    """Launches ``worker`` ran to the end (for --worker-trials)."""
    return sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get(attrs.LAUNCHED)
        and t.state != TrialState.RUNNING
        and t.user_attrs.get(attrs.WORKER) == worker
    )
