"""Carrying out a decision: the one place that queues, writes the state and says why.

The policy (tuner/study/policy/next_launch.py) decides as values; ``apply`` turns them
into effects on the study, in order: the cost plan said and recorded, the study's state
written (tuner/study/state.py ``attr_changes``), the decision's messages said, then each
launch claimed (once-only launches, tuner/study/run/queue.py ``Claims``), queued as an optuna
trial and, when queued, its message said. A stop is the controller's to carry out
(tuner/study/run/controller.py): it records the study's end.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna

from tuner.events import SweepObserver
from tuner.space.spec import SpaceSpec
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.policy.decisions import Decision, Launch
from tuner.study.run import peers, queue, verdicts
from tuner.study.state import StudyState, attr_changes


def apply(
    decision: Decision,
    *,
    study: optuna.Study,
    spec: SpaceSpec,
    state: StudyState,
    claims: queue.Claims | None,
    observer: SweepObserver,
    store: Store,
    facts: Callable[[], StudyAnalysis],
) -> str | None:
    """Carry out ``decision`` on ``study`` (whose state was ``state`` when it was taken);
    the mark of a recorded stop (None: no stop of the study was recorded)."""
    if decision.plan is not None:
        study.set_user_attr(attrs.PLAN, decision.plan.to_json())
        observer.cost_plan(decision.plan)
    if decision.state is not None:
        for name, value in attr_changes(state, decision.state).items():
            study.set_user_attr(name, value)
    for line in decision.messages:
        observer.message(line)
    for launch in decision.launches:
        if queue_launch(study, spec, launch, claims) and launch.message:
            observer.message(launch.message)
    stop = decision.stop
    if stop is None or not stop.whole_study:
        return None
    store.update_study(study.study_name, stop_reason=stop.reason, stop_detail=stop.detail)
    study.set_user_attr(attrs.STOP_REASON, stop.reason)
    study.set_user_attr(attrs.STOP_DETAIL, stop.detail)
    verdicts.record_final(study, facts())  # every trial's verdict, for optuna-dashboard
    return peers.mark_stop(study, stop.reason, claims.worker if claims else None)


def queue_launch(
    study: optuna.Study, spec: SpaceSpec, launch: Launch, claims: queue.Claims | None
) -> bool:
    """Queue ``launch`` (its copies), unless another worker's claim on it went through;
    a claimed launch's trials carry the claim (``tuner_claim``)."""
    if launch.claim is not None:
        kind, key = launch.claim
        return queue.claim_and_enqueue(
            study,
            claims,
            kind,
            key,
            spec,
            launch.params,
            launch.role,
            launch.extra_attrs,
            launches=launch.copies,
        )
    for _ in range(launch.copies):
        queue.enqueue_launch(study, spec, launch.params, launch.role, launch.extra_attrs)
    return True
