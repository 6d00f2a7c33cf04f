"""The final comparison's reserve: full search launches never eat into it; and the
screening cap: no screening launch past ``screening.max_launches``.

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

The reserve is released (``release_unused``) when the budget is down to it and the
search has no candidate for a comparison: the launches kept for a comparison that never
came go to the search (and to its confirmations), not to an early stop. A candidate found
then gets its comparison where the launches left hold its first look; else the answer
is "not settled" and names the --trials that would settle it.

``screening.max_launches`` is a cap, as ``--trials`` is: a confirmation of the search's last
screening launch is not made past it (it was, one launch over, in 8 of 48 small capped
studies, and interaction-vllm seed 1 ran 41 of 40), and the budget's stop comes next.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.space.objectives import is_multi_objective
from tuner.study import attrs
from tuner.study.policy.decisions import Launch
from tuner.study.policy.screening import fidelity
from tuner.study.policy.snapshot import Snapshot


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
