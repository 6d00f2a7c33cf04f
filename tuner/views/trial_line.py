"""One line per finished trial, as the sweep prints it: number, role, outcome, what changed."""

from __future__ import annotations

from optuna.trial import FrozenTrial, TrialState

from tuner.launcher.failure_cause import words
from tuner.space.settings import changed_from_defaults
from tuner.study import attrs


def trial_line(trial: FrozenTrial, metric: str) -> str:
    """One line per finished trial: number, role, state, value, what changed, why it failed."""
    params = trial.user_attrs.get(attrs.PARAMS) or {}
    changed = changed_from_defaults(params)
    what = " ".join(f"{k}={v}" for k, v in changed.items()) or "(defaults)"
    role = trial.user_attrs.get(attrs.ROLE, attrs.SEARCH)
    if trial.user_attrs.get(attrs.FIDELITY) == attrs.SCREEN:
        role = f"{role}/screen"  # a screening launch: it searches, never decides
    if trial.state == TrialState.COMPLETE and trial.values:
        # Several objectives: the first one's value, as the metric names it.
        outcome = f"{metric}={trial.values[0]:.4g}"
    else:
        outcome = trial.state.name.lower()
        cause = trial.user_attrs.get(attrs.FAILURE_CAUSE)
        if cause:
            outcome += f" ({words(cause)})"  # what the search learns from it
        reason = trial.user_attrs.get(attrs.REASON)
        if reason:
            outcome += f": {reason}"
    return f"trial {trial.number:>3} {role:<8} {outcome}  {what}"
