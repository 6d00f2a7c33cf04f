"""The sweep with several objectives: when the patience resets, and the plateau's sentence.

With ``objectives:`` there is no single incumbent to beat. The patience resets when the
*recommendable set* gains a member: a statistically non-dominated configuration that
beats the defaults on at least one objective and is worse on none (tuner/stats/pareto.py).
The set is kept as a study attr (``attrs.RECOMMENDABLE``) so a resumed study or another
worker counts from the same point. Confirmations come from tuner/study/pareto.py;
proposals from optuna's multi-objective TPE (docs/statistics.md, "Several objectives").
"""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial

from tuner.events import SweepObserver
from tuner.study import attrs, pareto
from tuner.study.analysis import StudyAnalysis


def track(
    study: optuna.Study, result: StudyAnalysis, trial: FrozenTrial, observer: SweepObserver
) -> None:
    """Reset the patience (``attrs.LAST_GAIN_TRIAL``) when the recommendable set grows.

    The first measured baseline starts the count, as the incumbent does with one objective.
    """
    answer = pareto.front(result)
    if answer is None:
        return
    if attrs.LAST_GAIN_TRIAL not in study.user_attrs:
        study.set_user_attr(attrs.LAST_GAIN_TRIAL, trial.number)
    known = set(study.user_attrs.get(attrs.RECOMMENDABLE, []))
    new = [key for key in answer.recommendable if key not in known]
    if not new:
        return
    study.set_user_attr(attrs.RECOMMENDABLE, sorted(known | set(new)))
    study.set_user_attr(attrs.LAST_GAIN_TRIAL, trial.number)
    for key in new:
        observer.message(
            "recommendable: "
            + pareto.describe(result, result.configs[key])
            + " (better than the defaults on an objective, worse on none)"
        )


def plateau_sentence(study: optuna.Study, trials_since: int) -> str:
    """Why a several-objective study stopped at its patience."""
    n = len(study.user_attrs.get(attrs.RECOMMENDABLE, []))
    return (
        f"the set of recommendable configurations ({n}: statistically non-dominated, better "
        f"than the defaults on an objective and worse on none) gained no member in "
        f"{trials_since} trials"
    )
