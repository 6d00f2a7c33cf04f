"""What runs next: the one place that decides, in a documented order.

A pure function from a snapshot of the study (tuner/study/policy/snapshot.py) to a
``Decision``: stop (with a reason), or the launches to queue, with the state after.
tuner/study/run/apply.py carries it out. After every trial (``after_trial``):

0. **recovery retries** come first of all: a dead worker's trials, failed and queued again
   by tuner/study/run/recovery.py before the policy is asked (optuna's queue is first in,
   first out, so they run before anything decided here);
1. another worker stopped the study: this worker stops too;
2. a **final comparison** waits or runs: nothing else is decided; once its launches are
   done, its next look while the last one was open (neither passed nor refuted: more
   launches a side, tuner/stats/looks.py), then the stop it ran before is recorded;
3. the cost plan, once, after the baseline launches (said and recorded), with the final
   comparison's sized looks (the budget keeps their launches from then on);
4. the goal tracks the finished trial: a significant gain resets the patience;
5. **confirmations**: what looks better than the incumbent, launched again (and, when the
   futility check rules out every untried change, or a screened study's plateau is due,
   the last look: the configuration launched once that the model still gives a chance);
6. the study's stop rules, in order (tuner/study/policy/stops.py): budget (--trials full
   loads; with screening, ``screening.max_launches`` screening launches), hours (--hours),
   every launch failed, the probe froze every param, an exhausted grid, a plateau, the futility
   stop, idle proposals; a plateau or the futility stop first queues the **final checks**
   (the best without its idle settings, a close call settled) while any is due; then,
   before any stop, the **final comparison** of the search's candidate when it is a
   change (tuner/study/policy/final_comparison.py: it and the defaults, fresh and
   interleaved; the answer rests on those launches alone);
7. this worker's own budget (--worker-trials);
8. the budget's last launches go to the **final checks**, then to the **final comparison**;
   where the search has no candidate for one, they go to the search (the reserve is
   released); a candidate with no room for its comparison stops the study ("not settled");
9. when no trial waits, the next search launch: **the probe's nominee** (once) >
   **the local search** (limits steered around) > **TPE** with the frozen params held
   (else nothing is queued and optuna's sampler proposes freely).

When a run opens (``opening``: a new or resumed study), before any trial: (recovery
retries) > the **next look** of a final comparison a previous run left open >
**baselines** (the defaults, ``stop.baseline_launches`` times; with screening,
as many screening launches, then ``screening.baseline_launches`` full ones) >
confirmations > the next search launch. Each step sees the launches decided before it, as
if queued. Every launch's fidelity is tuner/study/policy/screening.py's rule; with
screening, a full search launch (a setting screening cannot judge) is dropped once the
full launches left of --trials are the final comparison's.
"""

from __future__ import annotations

from tuner.space.settings import baseline_params
from tuner.space.spec import Scalar
from tuner.study import attrs
from tuner.study.facts.plan import CostPlan, study_plan
from tuner.study.policy import final_comparison, final_reserve, futility, stops
from tuner.study.policy.decisions import Decision, Launch, Stop
from tuner.study.policy.goal import Goal
from tuner.study.policy.snapshot import Snapshot


def opening(snap: Snapshot, goal: Goal) -> Decision:
    """The decision when a run opens, before its first trial (see the module)."""
    start = snap
    resumed, snap = final_comparison.resume_look(snap)
    if resumed:  # a comparison left open: its next look before any new search
        return Decision(launches=tuple(resumed), state=snap.state)
    snap = final_reserve.release_unused(snap)
    launches: list[Launch] = []
    for step in (baselines, goal.confirmations):
        decided = final_reserve.keep_final_reserve(snap, step(snap))
        launches += decided
        snap = snap.with_queued(decided)
    before = snap
    proposal, snap, local_done, skipped = _proposal(snap, goal)
    launches += final_reserve.keep_final_reserve(before, proposal)
    return Decision(
        launches=tuple(launches),
        state=snap.state if snap.state != start.state else None,
        messages=tuple(skipped),
        local_done=local_done,
    )


def after_trial(snap: Snapshot, goal: Goal) -> Decision:
    """The decision after a trial finished (see the module)."""
    peer = stops.peer_stop(snap.state, snap.stop_seen)
    if peer is not None:
        return Decision(stop=peer)
    if final_comparison.pending(snap):
        return Decision()  # the final comparison decides; nothing else is worth a launch
    more = final_comparison.next_look(snap)
    if more:  # its last look was open: more launches decide, then the stop
        return Decision(launches=tuple(more))
    done = final_comparison.due_stop(snap)
    if done is not None:
        return Decision(stop=done, state=snap.state.replace(final_trigger=None))
    snap = final_reserve.release_unused(snap)
    start = snap
    launches: list[Launch] = []
    plan = cost_plan(snap)
    if plan is not None:
        sized = plan.sizing.looks if plan.sizing is not None else None
        snap = snap.with_state(snap.state.replace(plan_said=True, final_looks=sized))
    snap, messages = goal.track(snap)
    confirmations = final_reserve.keep_final_reserve(snap, goal.confirmations(snap))
    launches += confirmations
    snap = snap.with_queued(confirmations)

    def decision(stop: Stop | None = None, local_done: bool | None = None) -> Decision:
        return Decision(
            launches=tuple(launches),
            stop=stop,
            state=snap.state if snap.state != start.state else None,
            messages=tuple(messages),
            local_done=local_done,
            plan=plan,
        )

    for rule in stops.STUDY_RULES:
        stop = rule(snap, goal)
        if stop is None:
            continue
        if rule in stops.AFTER_CHECKS:
            checks, snap = goal.final_checks(snap)
            if checks:  # the checks before the answer are worth their launches
                launches += checks
                snap = snap.with_queued(checks)
                break
        final, snap = goal.final_comparison(snap, stop)
        if final:  # the answer's launches first; the stop is recorded once they are done
            launches += final
            snap = snap.with_queued(final)
            return decision()
        launches = []  # the study stops: nothing more is worth a launch
        return decision(stop)
    worker = stops.worker_budget(snap)
    if worker is not None:
        return decision(worker)  # the other workers run what this one queued
    stop_spec = snap.spec.stop
    if snap.search_left() == 1 + stop_spec.confirmations and not snap.checks_pending:
        checks, snap = goal.final_checks(snap)  # the budget's last launches go to the checks
        launches += checks
        snap = snap.with_queued(checks)
    if snap.budget_spent() and not snap.checks_pending:
        last = stops.budget_stop(snap)
        final, snap = goal.final_comparison(snap, last)  # and to the final comparison
        idle = not launches and not any(t.waiting or t.running for t in snap.trials)
        if not final and idle and snap.spec.screening is None and not snap.reserve_released:
            # A candidate with no room left for its comparison: the answer is "not
            # settled", and a larger --trials resumes with it. (With screening the
            # screening launches go on: a candidate they find still gets the full ones.)
            return decision(stops.reserve_stop(snap))
        launches += final
        snap = snap.with_queued(final)
    before = snap
    proposal, snap, local_done, skipped = _proposal(snap, goal)
    launches += final_reserve.keep_final_reserve(before, proposal)
    messages += skipped
    return decision(local_done=local_done)


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


def _proposal(snap: Snapshot, goal: Goal) -> tuple[list[Launch], Snapshot, bool | None, list[str]]:
    """The goal's next search launch, when no trial waits (optuna runs a waiting one first)."""
    if snap.waiting:
        return [], snap, None, []
    return goal.proposal(snap)
