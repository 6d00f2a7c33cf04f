"""The final comparison: before a change is the answer, it and the defaults run again.

When the search is over (a stop rule fired, or the budget's last launches are reached)
and it has something worth a comparison (``StudyAnalysis.comparison_candidate``: its
candidate, or the best-looking change that could still be a gain worth deploying), the
candidate and the defaults are launched ``stop.final_launches`` times each, interleaved
(C B B C ...), with role ``final``; the stop that fired is remembered (the study's
``FinalMemory``, attr ``tuner_final_trigger``) and recorded once those launches are done.
The answer then rests on them alone (tuner/stats/final.py, tuner/study/facts/final.py).
Once per candidate: a candidate already compared is not launched again.

The next look: while a look neither passes nor refutes the candidate (its interval holds
the bar), both are launched again up to the next look's size (tuner/stats/looks.py: the
sized look the cost plan worked out from the noise, then half as many again each time),
continuing the interleaving, and the comparison is judged once more on all its launches,
at that look's level. Only whole (the budget must hold every launch of the look). A run
that opens on a study whose comparison was left open (its answer "not settled") takes the
next look first (``resume``): a larger --trials finishes the comparison before any new
search.

Its life is one value, ``FinalPhase`` (``phase``): none, a look running, the next look due,
settled or not settled (with the stop it waits to record, if any). This module is the one
that moves it: it alone writes the study's ``FinalMemory`` (the stop, the looks), and
tuner/study/policy/next_launch.py asks it one question after every trial (``step``).

Pure: a snapshot in; the launches (and the state after) out, or nothing.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from tuner import stats
from tuner.space.objectives import is_multi_objective
from tuner.space.settings import baseline_params
from tuner.stats.looks import LookPlan
from tuner.study import attrs
from tuner.study.facts.final_size import size_final
from tuner.study.facts.plan import CostPlan
from tuner.study.policy.decisions import Decision, Launch, Stop
from tuner.study.policy.snapshot import Snapshot
from tuner.study.state import FinalMemory, StudyState, Trigger


class Phase(enum.Enum):
    """Where the study's final comparison is (see the module)."""

    NONE = "none"
    """No look was judged: none was queued, or (with a stop waiting) none came back."""
    RUNNING = "running"
    """A look's launches wait or run: nothing else is decided until they are done."""
    NEXT_LOOK = "next look"
    """The last look neither passed nor refuted, and the budget holds the next one whole."""
    SETTLED = "settled"
    """The last look passed or refuted the candidate."""
    NOT_SETTLED = "not settled"
    """The last look is open (or was cut short) and its next look is not taken."""


@dataclass(frozen=True)
class FinalPhase:
    """The final comparison now: its phase, the last look's verdict, the next look's
    launches (``NEXT_LOOK``) and the stop it waits to record (None: none waits, or not yet)."""

    phase: Phase
    verdict: stats.FinalComparison | None = None
    launches: tuple[Launch, ...] = ()
    stop: Stop | None = None


def phase(snap: Snapshot) -> FinalPhase:
    """The final comparison's phase in ``snap``. The stop it remembered is due once no look
    runs and no next look is taken: then the study ends on it."""
    if pending(snap):
        return FinalPhase(Phase.RUNNING)
    trigger = snap.state.final.trigger
    facts = snap.facts
    verdicts = facts.final_comparisons() if facts.final_blocks or trigger else []
    last = verdicts[-1] if verdicts else None
    more = _next_look(snap, verdicts)
    if more:
        return FinalPhase(Phase.NEXT_LOOK, last, tuple(more))
    if last is not None:
        kind = Phase.NOT_SETTLED if last.straddles else Phase.SETTLED
    elif any(t.role == attrs.FINAL for t in snap.trials):
        kind = Phase.NOT_SETTLED  # its launches failed: no look was judged
    else:
        kind = Phase.NONE
    return FinalPhase(kind, last, stop=_due(snap, trigger, verdicts) if trigger else None)


def step(snap: Snapshot, goal: object) -> Decision | None:
    """After a trial, the final comparison's say (any goal; None: the search decides): a
    look running, nothing else; its next look due, its launches; its launches done, the
    stop it ran before (and the memory of it cleared)."""
    now = phase(snap)
    if now.phase is Phase.RUNNING:
        return Decision()  # the final comparison decides; nothing else is worth a launch
    if now.phase is Phase.NEXT_LOOK:
        return Decision(launches=now.launches)
    if now.stop is not None:
        final = dataclasses.replace(snap.state.final, trigger=None)
        return Decision(stop=now.stop, state=snap.state.replace(final=final))
    return None


def resume(snap: Snapshot, goal: object) -> Decision | None:
    """When a run opens: the look a previous run left to take (``resume_look``), before
    anything else; None: none."""
    found, after = resume_look(snap)
    if not found:
        return None
    return Decision(launches=tuple(found), state=after.state)


def planned(state: StudyState, plan: CostPlan) -> StudyState:
    """``state`` with the looks the cost plan sized (None where it sized none)."""
    looks = plan.sizing.looks if plan.sizing is not None else None
    return state.replace(final=dataclasses.replace(state.final, looks=looks))


def order(k: int) -> list[bool]:
    """The interleaving of ``k`` launches each: True for the candidate (C B B C C B ...),
    so that the mean launch time of both sides is the same and a linear drift cancels."""
    out: list[bool] = []
    for pair in range(k):
        out += [True, False] if pair % 2 == 0 else [False, True]
    return out


def pending(snap: Snapshot) -> bool:
    """A final launch waits or runs: the study waits for the comparison."""
    return any(t.role == attrs.FINAL and (t.waiting or t.running) for t in snap.trials)


def _due(snap: Snapshot, trigger: Trigger, verdicts: Sequence[stats.FinalComparison]) -> Stop:
    """The remembered stop, as recorded once the comparison's launches are all done: an
    open comparison's says why its next look was not taken."""
    detail = trigger.detail
    left = snap.full_left
    if verdicts and verdicts[-1].straddles and left > 0:
        f = verdicts[-1]
        detail += (
            f"; the comparison is not settled, and the {left} launch{'es' if left != 1 else ''}"
            f" left cannot hold its next look ({f.plan.size(f.look + 1)} a side)"
        )
    return Stop(trigger.reason, detail)


def launches(snap: Snapshot, trigger: Stop) -> tuple[list[Launch], Snapshot]:
    """The final comparison's first look before ``trigger`` is recorded, or nothing: the
    candidate is the defaults, was compared already, or the budget has no room left for
    the first look's launches a side (never fewer: the answer's test is the one the
    study's settings promise; the search's reserve keeps that room, see final_reserve)."""
    facts = snap.facts
    key = facts.comparison_candidate()
    if key is None or facts.baseline is None or key == facts.baseline.config_hash:
        return [], snap
    if not facts.eligible(facts.baseline):
        return [], snap  # the defaults break a limit: the answer is what meets it
    if any(t.role == attrs.FINAL and t.config == key for t in snap.trials):
        return [], snap  # compared once: the answer is that comparison's
    looks = _sized_now(snap)
    k = looks.first
    if snap.full_left < 2 * k:
        return [], snap
    config = facts.configs[key]
    sized = looks.sized
    then = f", then up to {sized} each while it is not settled" if sized > k else ""
    message = (
        f"final comparison: trial {config.trials[0]} and the defaults, "
        f"{k} fresh launch{'es' if k != 1 else ''} each, interleaved{then}, before "
        "the answer (the search's own launches only chose it)"
    )
    queued = _slots(snap, key, range(2 * k), message)
    final = FinalMemory(Trigger(trigger.reason, trigger.detail), looks)
    return queued, snap.with_state(snap.state.replace(final=final))


def _sized_now(snap: Snapshot) -> LookPlan:
    """The comparison's looks, sized again on the noise the search's launches measured
    (fixed now, before its first launch); the plan's (or the space's) where there is no
    noise to size from. Not cut to what the budget holds: a look the budget cannot hold
    is not taken, and the answer names the --trials that would hold it."""
    facts = snap.facts
    if facts.noise is None or is_multi_objective(snap.spec):
        return facts.look_plan
    return size_final(snap.spec, facts.noise).looks


def _next_look(snap: Snapshot, verdicts: Sequence[stats.FinalComparison]) -> list[Launch]:
    """The launches of the comparison's next look, when it is due (see the module): its
    last look is done (none runs: ``phase`` asks first) and neither passed nor refuted it,
    and the budget (--trials full loads, --hours) holds all of the next one. Each look's
    size is the plan's (tuner/stats/looks.py), fixed before the comparison's first launch."""
    facts = snap.facts
    if not facts.final_blocks:
        return []
    block = facts.final_blocks[-1]
    if not verdicts or verdicts[-1].candidate != block.candidate:
        return []
    verdict = verdicts[-1]
    if not verdict.straddles:
        return []
    key = block.candidate
    if key not in facts.configs:
        return []
    # The candidate's launches queued so far, whatever became of them: a failed launch is
    # not a reason for another look; a look is only taken whole.
    queued = sum(
        1 for t in snap.trials if t.role == attrs.FINAL and t.config == key and not t.interrupted
    )
    size = verdict.plan.size(verdict.look)
    if queued != size:
        return []
    more = verdict.plan.size(verdict.look + 1)
    extra = 2 * (more - size)
    if snap.full_left < extra or not snap.within_hours(extra * (snap.costs.full.per_launch_s or 0)):
        return []
    message = (
        f"final comparison, look {verdict.look + 1}: trial {facts.configs[key].trials[0]} is "
        f"{verdict.gain.gain * 100:+.1f}% against the defaults, its "
        f"{verdict.gain.confidence * 100:g}% interval {verdict.lower * 100:+.1f}% to "
        f"{verdict.upper * 100:+.1f}% neither clears the {verdict.bar * 100:.1f}% bar nor "
        f"lies below it: {more - size} more fresh "
        f"launch{'es' if more - size != 1 else ''} each, interleaved, and it is judged again "
        "on all of them"
    )
    return _slots(snap, key, range(2 * size, 2 * more), message)


def resume_look(snap: Snapshot) -> tuple[list[Launch], Snapshot]:
    """On opening a run: the next look of a comparison a previous run left open, or the
    first look of one the budget left no room for (either way its answer "not settled"),
    before any new search, with the budget's stop remembered."""
    if snap.state.final.trigger:
        return [], snap  # a run still waits on it: after_trial decides
    trigger = Stop(attrs.BUDGET, f"used the budget of {snap.budget} launches")
    if not snap.facts.final_blocks and snap.state.stop_reason == attrs.BUDGET:
        # The budget ran out before the candidate's comparison could run: it runs now.
        return launches(snap, trigger)
    now = phase(snap)
    if now.phase is not Phase.NEXT_LOOK:
        return [], snap
    final = dataclasses.replace(snap.state.final, trigger=Trigger(trigger.reason, trigger.detail))
    return list(now.launches), snap.with_state(snap.state.replace(final=final))


def _slots(snap: Snapshot, key: str, slots: range, message: str) -> list[Launch]:
    """The final launches in these slots of ``order``: the candidate's and the defaults',
    each claimed by its slot so that it is queued once in all workers."""
    facts = snap.facts
    config, baseline = facts.configs[key], facts.baseline
    assert baseline is not None
    defaults = baseline_params(snap.spec)
    sides = order(-(-slots.stop // 2))
    return [
        Launch(
            config.params if sides[slot] else defaults,
            attrs.FINAL,
            {attrs.CONFIG: key if sides[slot] else baseline.config_hash},
            claim=(attrs.FINAL, f"{key}:{slot}"),
            message=message if slot == slots.start else None,
        )
        for slot in slots
    ]
