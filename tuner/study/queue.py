"""What waits to be launched: enqueued optuna trials carrying their role and params.

Every launch tuner decides on itself (the baseline and its repeats, confirmations, the
local search's proposals, the simplification before the answer) is an enqueued trial:
optuna runs it next, and the user attrs say why it was queued.

With several workers on one study, a launch that must happen once in all (a baseline
slot, a confirmation of a configuration, the simplification of a best) is claimed
first (``Claims``, a row of ``tuner_claims`` under a unique key): the worker whose claim
goes through queues it, the others see the conflict and do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from tuner.space.settings import baseline_params
from tuner.space.spec import Scalar, Space, SpaceSpec
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.suggest import optuna_params


@dataclass(frozen=True)
class Claims:
    """This worker's claims on one study's once-only launches (tuner_claims)."""

    store: Store
    study: str
    worker: str

    def take(self, kind: str, key: str) -> bool:
        """True when this worker won ``kind``/``key`` (and must act on it), else False."""
        return self.store.claim(self.study, kind, key, self.worker)


def enqueue_baselines(study: optuna.Study, space: Space, claims: Claims | None = None) -> None:
    """Queue the baseline until it has been, is being, or is about to be launched enough times.

    A RUNNING baseline counts: another worker is measuring it right now. Each baseline
    ever queued has a slot number (0, 1, ... in the order queued, failed ones included);
    a worker queues slot N only if it claims it, so workers starting together queue the
    baseline and its repeats once in all.
    """
    wanted = space.spec.stop.baseline_launches
    trials = study.get_trials(deepcopy=False)
    baselines = [t for t in trials if t.user_attrs.get(attrs.ROLE) == attrs.BASELINE]
    have = sum(
        1
        for t in baselines
        if t.state in (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    )
    params = baseline_params(space.spec)
    for slot in range(len(baselines), len(baselines) + wanted - have):
        if claims is None or claims.take("baseline", str(slot)):
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
