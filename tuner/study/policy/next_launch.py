"""What runs next: the one place that decides, in a documented order.

A pure function from a snapshot of the study (tuner/study/policy/snapshot.py) to a
``Decision``: stop (with a reason), or the launches to queue, with the state after.
tuner/study/run/apply.py carries it out. Each step is a function ``(snapshot, goal) ->
Decision | None``: None, it has nothing to say; a part that ``goes_on``, the later steps
decide too and see its launches queued and its state; any other, the decision ends there
(a stop of the whole study queues nothing decided before it; a stop of this worker alone
keeps them, for the other workers). After every trial (``after_trial``), with the
final comparison's reserve released first where it has nothing to compare
(tuner/study/policy/final_reserve.py ``release_unused``), ``AFTER_TRIAL_STEPS``:

0. **recovery retries** come first of all: a dead worker's trials, failed and queued again
   by tuner/study/run/recovery.py before the policy is asked (optuna's queue is first in,
   first out, so they run before anything decided here);
1. ``peer_stopped``: another worker stopped the study: this worker stops too;
2. ``final_comparison.step``: a **final comparison** runs a look: nothing else is decided;
   once its launches are done, its next look while the last one was open (neither passed
   nor refuted: more launches a side, tuner/stats/looks.py), else the stop it ran before;
3. ``plan_said``: the cost plan, once, after the baseline launches (said and recorded),
   with the final comparison's sized looks (the budget keeps their launches from then on);
4. ``track``: the goal tracks the finished trial: a significant gain resets the patience;
5. ``failures``: what the finished trial's failure taught is said (the values not launched
   again, tuner/study/policy/failed_before.py), and a failed search launch whose cause may
   be chance (a timeout, a crash) is launched once more, before it counts;
6. ``confirmations``: what looks better than the incumbent, launched again (and, when the
   futility check rules out every untried change, or a screened study's plateau is due,
   the last look: the configuration launched once that the model still gives a chance);
7. ``stops.study_rules``: the study's stop rules, in order (tuner/study/policy/stops.py):
   budget (--trials full loads; with screening, ``screening.max_launches`` screening
   launches), hours (--hours), every launch failed, the probe froze every param, an
   exhausted grid, a plateau, the futility stop, idle proposals; a plateau or the futility
   stop first queues the **final checks** (the best without its idle settings, a close
   call settled) while any is due, and the decision ends there; then, before any stop,
   the **final comparison** of the search's candidate when it is a change
   (tuner/study/policy/final_comparison.py: it and the defaults, fresh and interleaved;
   the answer rests on those launches alone);
8. ``worker_budget``: this worker's own budget (--worker-trials);
9. ``final_reserve.budget_end``: the budget's last launches go to the **final checks**,
   then to the **final comparison**, and the decision ends there; where the search has no
   candidate for one, they go to the search (the reserve is released); a candidate with no
   room for its comparison stops the study ("not settled");
10. ``proposal``: when no trial waits, the next search launch: **the probe's nominee**
   (once) > **the local search** (limits steered around, what failed launches refuse left
   out) > **TPE** with the frozen params held (else nothing is queued and optuna's sampler
   proposes freely).

When a run opens (``opening``: a new or resumed study), before any trial, ``OPENING_STEPS``:
(recovery retries) > the **next look** of a final comparison a previous run left open
(``final_comparison.resume``: then nothing else) > **baselines** (the defaults,
``stop.baseline_launches`` times; with screening, as many screening launches, then
``screening.baseline_launches`` full ones) > a failed launch's second chance not queued yet
> confirmations > the next search launch.
Every confirmation and proposal passes the final comparison's reserve
(``final_reserve.keep_final_reserve``; baselines and final launches are never held back).
Every launch's fidelity is tuner/study/policy/screening.py's rule; with screening, a full
search launch (a setting screening cannot judge) is dropped once the full launches left of
--trials are the final comparison's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from tuner.launcher.failure_cause import words
from tuner.space.settings import baseline_params
from tuner.space.spec import Scalar
from tuner.study import attrs
from tuner.study.facts.plan import CostPlan
from tuner.study.facts.plan_due import study_plan
from tuner.study.policy import failed_before, final_comparison, final_reserve, futility, stops
from tuner.study.policy.decisions import Decision, Launch
from tuner.study.policy.goal import Goal
from tuner.study.policy.snapshot import Snapshot

Step = Callable[[Snapshot, Goal], "Decision | None"]


def opening(snap: Snapshot, goal: Goal) -> Decision:
    """The decision when a run opens, before its first trial (see the module)."""
    return decide(final_reserve.release_unused(snap), goal, OPENING_STEPS)


def after_trial(snap: Snapshot, goal: Goal) -> Decision:
    """The decision after a trial finished (see the module)."""
    return decide(final_reserve.release_unused(snap), goal, AFTER_TRIAL_STEPS)


def decide(snap: Snapshot, goal: Goal, steps: Sequence[Step]) -> Decision:
    """The steps in order, each seeing the parts decided before it as queued, up to the
    first that ends the decision; the state is the decision's when it changed."""
    start, made = snap, Decision()
    for step in steps:
        part = step(snap, goal)
        if part is None:
            continue
        made = _joined(made, part)
        snap = snap.with_queued(part.launches)
        if part.state is not None:
            snap = snap.with_state(part.state)
        if not part.goes_on:
            break
    state = snap.state if snap.state != start.state else None
    return dataclasses.replace(made, state=state, goes_on=False)


def _joined(made: Decision, part: Decision) -> Decision:
    """The decision so far with ``part`` after it. A stop of the whole study queues nothing:
    no launch decided before it is worth making any more."""
    ends_study = part.stop is not None and part.stop.whole_study
    return Decision(
        launches=() if ends_study else made.launches + part.launches,
        stop=part.stop,
        state=part.state if part.state is not None else made.state,
        messages=made.messages + part.messages,
        local_done=part.local_done if part.local_done is not None else made.local_done,
        plan=part.plan if part.plan is not None else made.plan,
        goes_on=part.goes_on,
    )


# --- the steps -----------------------------------------------------------------------------


def peer_stopped(snap: Snapshot, goal: Goal) -> Decision | None:
    """Another worker stopped the study since this worker saw its mark: this one stops."""
    stop = stops.peer_stop(snap.state, snap.stop_seen)
    return Decision(stop=stop) if stop is not None else None


def plan_said(snap: Snapshot, goal: Goal) -> Decision | None:
    """The cost plan, when it is due (once, after the baseline launches), with the final
    comparison's looks it sized."""
    plan = cost_plan(snap)
    if plan is None:
        return None
    state = final_comparison.planned(snap.state.replace(plan_said=True), plan)
    return Decision(state=state, plan=plan, goes_on=True)


def track(snap: Snapshot, goal: Goal) -> Decision | None:
    """The goal's tracking of the finished trial: a significant gain resets the patience."""
    after, messages = goal.track(snap)
    if not messages and after.state == snap.state:
        return None
    return Decision(state=after.state, messages=tuple(messages), goes_on=True)


def confirmations(snap: Snapshot, goal: Goal) -> Decision | None:
    """The goal's confirmations the final comparison's reserve leaves room for."""
    kept = final_reserve.keep_final_reserve(snap, goal.confirmations(snap))
    return Decision(launches=tuple(kept), goes_on=True) if kept else None


def worker_budget(snap: Snapshot, goal: Goal) -> Decision | None:
    """This worker used its own budget (--worker-trials): it stops, the study goes on."""
    stop = stops.worker_budget(snap)
    return Decision(stop=stop) if stop is not None else None


def proposal(snap: Snapshot, goal: Goal) -> Decision | None:
    """The goal's next search launch, within the reserve, when no trial waits (optuna runs a
    waiting one first); the local search's answer and the proposals the limits skipped."""
    if snap.waiting:
        return None
    launches, after, local_done, skipped = goal.proposal(snap)
    return Decision(
        launches=tuple(final_reserve.keep_final_reserve(snap, launches)),
        state=after.state,
        messages=tuple(skipped),
        local_done=local_done,
    )


def failures(snap: Snapshot, goal: Goal) -> Decision | None:
    """What the finished trial's failure taught, said once, and a failed search launch's
    second chance when its cause may be chance, within the reserve."""
    found = snap.failures()
    if found is None:
        return None
    said: list[str] = []
    if snap.finished is not None:
        for level in (False, True) if snap.spec.screening is not None else (False,):
            learned = found.of(screening=level).learned(snap.finished)
            said += [f"learned: {s}" for s in learned if f"learned: {s}" not in said]
    again = [
        Launch(
            t.params,
            attrs.SEARCH,
            {
                key: value
                for key, value in (
                    (attrs.PROPOSER, t.proposer),
                    (attrs.FIDELITY, t.fidelity),
                    (attrs.CONFIG, t.config),
                    (attrs.RETRY_OF, t.number),
                )
                if value is not None
            },
            claim=(attrs.FAILURE_RETRY, str(t.number)),
            message=f"trial {t.number} failed ({words(t.cause)}): launched once more, since "
            "that may be chance; it counts against its settings if it fails again",
        )
        for t in failed_before.retries(snap.trials)
    ]
    kept = final_reserve.keep_final_reserve(snap, again)
    if not said and not kept:
        return None
    return Decision(launches=tuple(kept), messages=tuple(said), goes_on=True)


def baseline_launches(snap: Snapshot, goal: Goal) -> Decision | None:
    """The baselines still to launch (``baselines``)."""
    found = baselines(snap)
    return Decision(launches=tuple(found), goes_on=True) if found else None


AFTER_TRIAL_STEPS: tuple[Step, ...] = (
    peer_stopped,
    final_comparison.step,
    plan_said,
    track,
    failures,
    confirmations,
    stops.study_rules,
    worker_budget,
    final_reserve.budget_end,
    proposal,
)
"""The decision after a trial, in the order its steps are asked (see the module)."""
OPENING_STEPS: tuple[Step, ...] = (
    final_comparison.resume,
    baseline_launches,
    failures,
    confirmations,
    proposal,
)
"""The decision when a run opens, in order (see the module)."""


def baselines(snap: Snapshot) -> list[Launch]:
    """The defaults, until they have been, are being, or are about to be launched
    ``stop.baseline_launches`` times (RUNNING counts: another worker measures it now).

    Each baseline ever queued has a slot number (0, 1, ... in the order queued, failed
    ones included), claimed, so workers starting together queue it once in all.
    """
    params = baseline_params(snap.spec)
    screening = snap.spec.screening
    if screening is None:
        return _baseline_slots(snap, params, snap.spec.stop.baseline_launches)
    # With screening, the defaults at both fidelities: the screening ones first (the
    # search's reference, minutes each), then the full ones (the bias, the drift's start).
    return [
        *_baseline_slots(snap, params, snap.spec.stop.baseline_launches, attrs.SCREEN),
        *_baseline_slots(snap, params, screening.baseline_launches, attrs.FULL),
    ]


def _baseline_slots(
    snap: Snapshot, params: dict[str, Scalar], wanted: int, fidelity: str | None = None
) -> list[Launch]:
    """The baselines still to queue (of one fidelity, with screening), one claimed slot each:
    ``0, 1, ...`` (screening ones and those of a study without screening), ``full0, ...``."""
    queued = [
        t
        for t in snap.trials
        if t.role == attrs.BASELINE and (fidelity is None or (t.fidelity or attrs.FULL) == fidelity)
    ]
    have = sum(1 for t in queued if t.state in ("COMPLETE", "RUNNING", "WAITING"))
    prefix = "full" if fidelity == attrs.FULL else ""
    extra = {attrs.FIDELITY: fidelity} if fidelity is not None else {}
    return [
        Launch(params, attrs.BASELINE, extra_attrs=extra, claim=(attrs.BASELINE, f"{prefix}{slot}"))
        for slot in range(len(queued), len(queued) + wanted - have)
    ]


def cost_plan(snap: Snapshot) -> CostPlan | None:
    """The cost plan, when it is due: once, after the baseline launches."""
    if snap.state.plan_said:
        return None
    return study_plan(
        snap.facts,
        snap.launch_times,
        budget=snap.budget,
        futility_min_trials=futility.MIN_TRIALS if snap.spec.stop.futility > 0 else None,
        costs=snap.costs,
    )
