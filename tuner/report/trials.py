"""What optuna's trials say in the report: the failed and pruned ones with why, and the
Pareto front of a study with several objectives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from tuner.report.launches import changed_label
from tuner.storage import LaunchRow
from tuner.study import attrs


@dataclass(frozen=True)
class Failure:
    """A trial that failed, was pruned, or was not launched, with why."""

    trial: int
    state: str
    role: str
    launched: bool
    changed: str
    reason: str
    cause: str | None = None
    """Why its launch failed, as the search learns from it (launcher/failure_cause.py)."""


@dataclass(frozen=True)
class ParetoPoint:
    trial: int
    x: float
    y: float
    on_front: bool


@dataclass(frozen=True)
class Pareto:
    """The first two objectives of a multi-objective study, its front marked."""

    names: tuple[str, str]
    directions: tuple[str, str]
    points: tuple[ParetoPoint, ...]


def failures(
    trials: Sequence[optuna.trial.FrozenTrial], launches: Sequence[LaunchRow]
) -> tuple[Failure, ...]:
    """Failed and pruned trials (launched or not) with their reasons."""
    reasons = {r.trial_number: r.reason for r in launches if r.trial_number is not None}
    out = []
    for t in trials:
        if t.state not in (TrialState.FAIL, TrialState.PRUNED):
            continue
        out.append(
            Failure(
                trial=t.number,
                state=t.state.name.lower(),
                role=str(t.user_attrs.get(attrs.ROLE, attrs.SEARCH)),
                launched=bool(t.user_attrs.get(attrs.LAUNCHED, t.number in reasons)),
                changed=changed_label(t.user_attrs.get(attrs.PARAMS) or {}),
                reason=str(
                    t.user_attrs.get(attrs.REASON) or reasons.get(t.number) or "no reason recorded"
                ),
                cause=t.user_attrs.get(attrs.FAILURE_CAUSE),
            )
        )
    return tuple(out)


def pareto(study: optuna.Study) -> Pareto | None:
    """The first two objectives of a study with several, its Pareto front marked.

    tuner's own studies have one objective today (several are not built: README,
    Missing); then there is no front, and the report leaves the section out.
    """
    directions = study.directions
    if len(directions) < 2:
        return None
    names = study.metric_names or [f"objective {i}" for i in range(len(directions))]
    front = {t.number for t in study.best_trials}
    points = tuple(
        ParetoPoint(t.number, float(t.values[0]), float(t.values[1]), t.number in front)
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.values is not None
    )
    return Pareto(
        names=(names[0], names[1]),
        directions=(directions[0].name.lower(), directions[1].name.lower()),
        points=points,
    )
