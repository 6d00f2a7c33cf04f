"""Telling the study's other workers that it has stopped.

A stop found by any worker (plateau, futility, budget, exhausted space, every launch
failed, the probe's finding) holds for the study: ``mark_stop`` records who stopped it
and when (``tuner_stopped_by``, ``worker#trials``); every other worker's policy sees the
mark change after its current trial (tuner/study/policy/stops.py ``peer_stop``) and stops
too. A stop of one worker only (Ctrl-C, a signal, its own ``--worker-trials``) leaves the
others running.
"""

from __future__ import annotations

import optuna

from tuner.study import attrs


def mark_stop(study: optuna.Study, reason: str, worker: str | None) -> str | None:
    """Tell the other workers the study has stopped; the mark (None for a local stop)."""
    if reason in attrs.LOCAL_STOPS:
        return None
    marker = f"{worker or '-'}#{len(study.get_trials(deepcopy=False))}"
    study.set_user_attr(attrs.STOPPED_BY, marker)
    return marker
