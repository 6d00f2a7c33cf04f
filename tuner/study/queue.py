"""What waits to be launched: enqueued optuna trials carrying their role and params.

Every launch tuner decides on itself (the baseline and its repeats, confirmations, the
local search's proposals, the simplification before the answer) is an enqueued trial:
optuna runs it next, and the user attrs say why it was queued.
"""

from __future__ import annotations

from collections.abc import Mapping

import optuna
from optuna.trial import TrialState

from tuner.space.settings import baseline_params
from tuner.space.spec import Scalar, Space, SpaceSpec
from tuner.study import attrs
from tuner.study.suggest import optuna_params


def enqueue_baselines(study: optuna.Study, space: Space) -> None:
    """Queue the baseline until it has been, is being, or is about to be launched enough times.

    A RUNNING baseline counts: another worker is measuring it right now.
    """
    wanted = space.spec.stop.baseline_launches
    have = sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get(attrs.ROLE) == attrs.BASELINE
        and t.state in (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    )
    params = baseline_params(space.spec)
    for _ in range(wanted - have):
        enqueue_launch(study, space.spec, params, attrs.BASELINE)


def enqueue_launch(
    study: optuna.Study,
    spec: SpaceSpec,
    params: Mapping[str, Scalar],
    role: attrs.Role,
    extra_attrs: Mapping[str, object] | None = None,
) -> None:
    """Queue one launch of ``params`` in ``role`` (baseline, search, confirm, simplify)."""
    study.enqueue_trial(
        dict(optuna_params(spec, params)),
        user_attrs={attrs.ROLE: role, attrs.PARAMS: dict(params), **(extra_attrs or {})},
        skip_if_exists=False,
    )
