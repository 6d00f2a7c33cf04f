"""The final comparison: before a change is the answer, it and the defaults run again.

When the search is over (a stop rule fired, or the budget's last launches are reached)
and its candidate (``StudyAnalysis.candidate``) is a change from the defaults, the
candidate and the defaults are launched ``stop.final_launches`` times each, interleaved
(C B B C ...), with role ``final``; the stop that fired is remembered (study attr
``tuner_final_trigger``) and recorded once those launches are done. The answer then
rests on them alone (tuner/stats/final.py, tuner/study/facts/final.py). Once per
candidate: a candidate already compared is not launched again.

The second look: when that first look neither passes nor refutes the candidate (its
interval holds the bar: a defaults launch drawn high, or a gain small against the
noise), both are launched again up to ``stop.final_launches_max`` a side, continuing the
interleaving, and the comparison is judged once more on all its launches. Once per
comparison, and only whole (the budget must hold every launch of it). The space fixes
beforehand whether a comparison may take two looks (``Space.final_looks``); each look is
then judged at half the error rate, so the two together keep the answer's guarantee.

Pure: a snapshot in; the launches (and the state after) out, or nothing.
"""

from __future__ import annotations

from tuner.space.settings import baseline_params
from tuner.study import attrs
from tuner.study.policy.decisions import Launch, Stop
from tuner.study.policy.snapshot import Snapshot


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


def due_stop(snap: Snapshot) -> Stop | None:
    """The remembered stop, once the final comparison's launches are all done."""
    trigger = snap.state.final_trigger
    if not trigger or pending(snap):
        return None
    return Stop(str(trigger.get("reason", attrs.BUDGET)), str(trigger.get("detail", "")))


def launches(snap: Snapshot, trigger: Stop) -> tuple[list[Launch], Snapshot]:
    """The final comparison's first look before ``trigger`` is recorded, or nothing: the
    candidate is the defaults, was compared already, or the budget has no room left for
    ``stop.final_launches`` launches a side (never fewer: the answer's test is the one the
    study's settings promise; the search's reserve keeps that room, see final_reserve)."""
    facts, spec = snap.facts, snap.spec
    candidate = facts.candidate()
    if candidate is None or candidate.keep_defaults or facts.baseline is None:
        return [], snap
    if not facts.eligible(facts.baseline):
        return [], snap  # the defaults break a limit: the answer is what meets it
    key = candidate.recommended
    if any(t.role == attrs.FINAL and t.config == key for t in snap.trials):
        return [], snap  # compared once: the answer is that comparison's
    k = spec.stop.final_launches
    if snap.full_left < 2 * k:
        return [], snap
    config = facts.configs[key]
    message = (
        f"final comparison: trial {config.trials[0]} and the defaults, "
        f"{k} fresh launch{'es' if k != 1 else ''} each, interleaved, before "
        "the answer (the search's own launches only chose it)"
    )
    queued = _slots(snap, key, range(2 * k), message)
    remembered = {"reason": trigger.reason, "detail": trigger.detail}
    return queued, snap.with_state(snap.state.replace(final_trigger=remembered))


def second_look(snap: Snapshot) -> list[Launch]:
    """The launches of the comparison's second look, when it is due (see the module): its
    first look is done, its interval holds the bar, the space allows a second look, none
    was taken, and the budget (--trials full loads, --hours) holds all of it."""
    facts, spec = snap.facts, snap.spec
    if not snap.state.final_trigger or spec.final_looks < 2 or not facts.final_blocks:
        return []
    verdicts = facts.final_comparisons()
    block = facts.final_blocks[-1]
    if not verdicts or verdicts[-1].candidate != block.candidate:
        return []
    verdict = verdicts[-1]
    if not verdict.straddles:
        return []
    key = block.candidate
    # Slots queued so far, whatever became of them: a failed launch is not a reason
    # for a third look.
    slots = sum(1 for t in snap.trials if t.role == attrs.FINAL and t.config == key)
    most = spec.final_launches_most
    if slots != spec.stop.final_launches or key not in facts.configs:
        return []
    extra = 2 * (most - slots)
    if snap.full_left < extra or not snap.within_hours(extra * (snap.costs.full.per_launch_s or 0)):
        return []
    message = (
        f"final comparison, second look: trial {facts.configs[key].trials[0]} is "
        f"{verdict.gain.gain * 100:+.1f}% against the defaults, its "
        f"{verdict.gain.confidence * 100:g}% interval {verdict.lower * 100:+.1f}% to "
        f"{verdict.upper * 100:+.1f}% holds the {verdict.bar * 100:.1f}% bar: "
        f"{most - slots} more fresh launch{'es' if most - slots != 1 else ''} each, "
        "interleaved, and it is judged again on all of them"
    )
    return _slots(snap, key, range(2 * slots, 2 * most), message)


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
