"""What waits to be launched: enqueued optuna trials carrying their role and params.

Every launch tuner decides on itself (the baseline and its repeats, confirmations, the
local search's proposals, the simplification before the answer) is an enqueued trial:
optuna runs it next, and the user attrs say why it was queued.

With several workers on one study, a launch that must happen once in all (a baseline
slot, a confirmation of a configuration, the simplification of a best) is claimed
first (``Claims``, a row of ``tuner_claims`` under a unique key): the worker whose claim
goes through queues it, the others see the conflict and do not. Every trial queued under
a claim carries it (``tuner_claim``: ``kind:key``), so the study says whether a claimed
launch was queued (``claim_and_enqueue`` claims and queues in one call).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import optuna

from tuner.space.spec import Scalar, SpaceSpec
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.policy import screening
from tuner.study.run.workers import DeadWorkers, Heartbeat
from tuner.study.suggest import optuna_params

log = logging.getLogger(__name__)


LAUNCH_CLAIMS: Final = frozenset(
    {attrs.BASELINE, attrs.CONFIRM, attrs.SIMPLIFY, attrs.FINAL, "retry", attrs.FAILURE_RETRY}
)
"""The kinds of claim on a launch, which expire with a dead holder that never queued it
(``retry`` is tuner/study/run/recovery.py's, ``failure_retry`` a failed launch's second
chance). Any other claim, the study's hardware fingerprint (tuner/study/run/workers.py),
never expires."""


@dataclass(frozen=True)
class Claims:
    """This worker's claims on one study's once-only launches (tuner_claims).

    A claim on a launch (``LAUNCH_CLAIMS``) expires when its holder is dead (``DeadWorkers``,
    the rule recovery uses: gone from this host, or stopped or silent past ``grace_s`` on
    another) and no trial of ``queued_in`` carries it (``tuner_claim``): the holder died
    between winning it and queueing the launch. The next worker to claim it takes it over,
    one worker only. A live holder's claim, or one whose launch was queued, is never taken.
    """

    store: Store
    study: str
    worker: str
    queued_in: optuna.Study | None = None
    """The study whose trials say whether a claimed launch was queued; without it no claim
    expires."""
    grace_s: float | None = None
    """How long a silent worker of another host counts as live (default: from the
    environment, ``Heartbeat.from_env``)."""

    def take(self, kind: str, key: str) -> bool:
        """True when this worker won ``kind``/``key`` (and must act on it), else False.

        The first INSERT wins; a later one wins only an expired claim, taken over."""
        if self.store.claim(self.study, kind, key, self.worker):
            return True
        return self._take_expired(kind, key)

    def _take_expired(self, kind: str, key: str) -> bool:
        if kind not in LAUNCH_CLAIMS or self.queued_in is None:
            return False
        holder = self.store.claim_holder(self.study, kind, key)
        if holder is None or holder == self.worker:
            return False
        grace = self.grace_s if self.grace_s is not None else Heartbeat.from_env().grace_s
        dead = DeadWorkers(self.store, self.study, grace).why(holder)
        if dead is None:
            return False  # alive (or not known to be dead): it queues the launch itself
        tag = claim_attrs(kind, key)[attrs.CLAIM]
        trials = self.queued_in.get_trials(deepcopy=False)
        if any(t.user_attrs.get(attrs.CLAIM) == tag for t in trials):
            return False  # queued before its holder died
        if not self.store.take_over_claim(self.study, kind, key, holder=holder, worker=self.worker):
            return False  # another worker took it over first
        log.info("claim %s taken over: %s, and nothing was queued under it", tag, dead)
        return True

    def take_and_queue(
        self, kind: str, key: str, enqueue: Callable[[Mapping[str, object]], None]
    ) -> bool:
        """Take ``kind``/``key`` and, when won, call ``enqueue`` with the user attrs every
        trial it queues must carry (``tuner_claim``). True when it was won and queued."""
        if not self.take(kind, key):
            return False
        enqueue(claim_attrs(kind, key))
        return True


def claim_attrs(kind: str, key: str) -> dict[str, object]:
    """The user attrs of a trial queued under the claim ``kind``/``key``."""
    return {attrs.CLAIM: f"{kind}:{key}"}


def claim_and_enqueue(
    study: optuna.Study,
    claims: Claims | None,
    kind: str,
    key: str,
    spec: SpaceSpec,
    params: Mapping[str, Scalar],
    role: attrs.Role,
    extra_attrs: Mapping[str, object] | None = None,
    *,
    launches: int = 1,
) -> bool:
    """Claim ``kind``/``key`` and, when won, queue ``launches`` launches of ``params`` in
    ``role``, each carrying the claim. True when it queued them (always, without claims:
    one worker needs none).
    """

    def enqueue(claimed: Mapping[str, object]) -> None:
        for _ in range(launches):
            enqueue_launch(study, spec, params, role, {**(extra_attrs or {}), **claimed})

    if claims is None:
        enqueue(claim_attrs(kind, key))
        return True
    return claims.take_and_queue(kind, key, enqueue)


def enqueue_launch(
    study: optuna.Study,
    spec: SpaceSpec,
    params: Mapping[str, Scalar],
    role: attrs.Role,
    extra_attrs: Mapping[str, object] | None = None,
) -> None:
    """Queue one launch of ``params`` in ``role`` (baseline, search, confirm, simplify);
    a claimed one carries its claim among ``extra_attrs`` (``claim_and_enqueue``)."""
    extra = dict(extra_attrs or {})
    fixed = extra.get(attrs.FIDELITY)
    # Its fidelity decided now (tuner/study/policy/screening.py), as the snapshot counted it.
    extra[attrs.FIDELITY] = screening.fidelity(spec, role, params, str(fixed) if fixed else None)
    study.enqueue_trial(
        dict(optuna_params(spec, params)),
        user_attrs={attrs.ROLE: role, attrs.PARAMS: dict(params), **extra},
        skip_if_exists=False,
    )
