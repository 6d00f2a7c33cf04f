"""The final comparison's reserve: full search launches never eat into it; the budget's
end, its own rule; and the screening cap: no screening launch past
``screening.max_launches``.

``--trials`` counts full loads; the last ``2 x stop.final_launches`` of them are the final
comparison's (the answer's launches). Without screening every search launch is full; with
it, a setting screening cannot judge (tuner/space/screening.py) is searched on full loads.
Either way a confirmation or a proposal that would leave the final comparison fewer than
its launches is not made (a squeezed comparison, one launch a side, C then B, would neither
cancel a drift nor be the comparison the study's settings promise).
tuner/study/policy/next_launch.py passes every confirmation and proposal through
``keep_final_reserve``; the final checks ask ``Snapshot.has_room``, which keeps the same
reserve; tuner/study/run/trial.py refuses a full launch optuna's sampler proposed past it
with screening (screening.full_reserve_refusal).

The budget's end (``budget_end``, a step of next_launch): when the search has one
confirmed configuration's launches left, they go to the final checks; once what is left
is the reserve, to the final comparison. The reserve is released (``release_unused``)
when the budget is down to it and the search has no candidate for a comparison: the
launches kept for a comparison that never came go to the search (and to its
confirmations), not to an early stop. A candidate found then gets its comparison where
the launches left hold its first look; else the study stops (``reserve_stop``) and the
answer is "not settled", naming the --trials that would settle it.

``screening.max_launches`` is a cap, as ``--trials`` is: no launch of the search's, not
even a confirmation of its last screening launch, is made past it, so a study never runs
more screening launches than it was given; the budget's stop comes next.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.space.objectives import is_multi_objective
from tuner.study import attrs
from tuner.study.policy.decisions import Decision, Launch, Stop
from tuner.study.policy.goal import Goal
from tuner.study.policy.screening import fidelity
from tuner.study.policy.snapshot import Snapshot
from tuner.study.policy.stops import budget_stop


def keep_final_reserve(snap: Snapshot, launches: Sequence[Launch]) -> list[Launch]:
    """``launches`` without the full ones that would eat into the final comparison's full
    launches (``2 x stop.final_launches`` of --trials), with screening or without, and
    without the screening ones past ``screening.max_launches``."""
    spec = snap.spec
    left = snap.full_left - snap.final_reserve
    screening = spec.screening
    screen_left = screening.max_launches - snap.committed_of(True) if screening else 0
    kept = []
    for launch in launches:
        if launch.role in (attrs.BASELINE, attrs.FINAL):
            kept.append(launch)
            continue
        full = fidelity(spec, launch.role, launch.params, launch.fixed_fidelity) == attrs.FULL
        room = left if full else screen_left
        if room < launch.copies:
            continue
        if full:
            left -= launch.copies
        else:
            screen_left -= launch.copies
        kept.append(launch)
    return kept


def release_unused(snap: Snapshot) -> Snapshot:
    """``snap`` with the reserve released when the budget is down to it, no final launch
    was ever queued and the search has no candidate for a comparison (see the module);
    without screening (screening launches never eat into it) and with one objective."""
    if snap.spec.screening is not None or is_multi_objective(snap.spec):
        return snap
    if snap.full_left > snap.final_reserve or snap.full_left <= 0:
        return snap
    if any(t.role == attrs.FINAL for t in snap.trials):
        return snap
    if snap.facts.comparison_candidate() is not None:
        return snap
    return snap.releasing_reserve()


def budget_end(snap: Snapshot, goal: Goal) -> Decision | None:
    """The budget's last launches, while no check waits or runs: with one confirmed
    configuration's launches (1 + stop.confirmations) left to the search, the final checks;
    once what is left is the reserve, the final comparison (before the budget's stop). What
    it queues ends the decision: those launches are the budget's last, not the search's.
    Nothing to compare, no screening, the reserve kept and nothing waiting or running: the
    study stops (``reserve_stop``). None: not the budget's end yet."""
    start, launches = snap, []
    if snap.search_left() == 1 + snap.spec.stop.confirmations and not snap.checks_pending:
        checks, snap = goal.final_checks(snap)
        launches += checks
        snap = snap.with_queued(checks)
    if snap.budget_spent() and not snap.checks_pending:
        final, snap = goal.final_comparison(snap, budget_stop(snap))
        # Every launch decided so far is queued in ``snap``: idle is nothing in flight.
        idle = not any(t.waiting or t.running for t in snap.trials)
        if not final and idle and snap.spec.screening is None and not snap.reserve_released:
            # A candidate with no room left for its comparison: the answer is "not
            # settled", and a larger --trials resumes with it. (With screening the
            # screening launches go on: a candidate they find still gets the full ones.)
            return Decision(stop=reserve_stop(snap), state=snap.state)
        launches += final
    if not launches and snap.state == start.state:
        return None
    return Decision(launches=tuple(launches), state=snap.state, goes_on=not launches)


def reserve_stop(snap: Snapshot) -> Stop:
    """The budget's stop when only the final comparison's launches are left and it has
    nothing to compare (no candidate, or too few launches left for its own)."""
    left = snap.full_left
    if left <= 0:
        return budget_stop(snap)
    why = (
        "the search's choice needs more for its final comparison "
        f"({2 * snap.facts.look_plan.first}: its first look, both sides): not settled"
        if snap.facts.comparison_candidate() is not None
        else "kept for a final comparison, and the search found no candidate for one"
    )
    return Stop(
        attrs.BUDGET,
        f"used the budget of {snap.budget} launches but its last {left}: {why}; "
        "no launch left could change the answer",
    )
