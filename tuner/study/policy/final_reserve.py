"""The final comparison's reserve: with screening, full search launches never eat into it.

A setting screening cannot judge (tuner/space/screening.py) is searched on full loads, which
``--trials`` counts; the last ``2 x stop.final_launches`` of them are the final comparison's
(the answer's launches). tuner/study/policy/next_launch.py passes every confirmation and
proposal through ``keep_final_reserve``; tuner/study/run/trial.py refuses a full launch
optuna's sampler proposed past it (screening.full_reserve_refusal).
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.study import attrs
from tuner.study.policy.decisions import Launch
from tuner.study.policy.screening import fidelity
from tuner.study.policy.snapshot import Snapshot


def keep_final_reserve(snap: Snapshot, launches: Sequence[Launch]) -> list[Launch]:
    """``launches`` without the full ones that would eat into the final comparison's full
    launches (``2 x stop.final_launches`` of --trials): with screening, a setting screening
    cannot judge is searched on full loads, but never with the answer's."""
    spec = snap.spec
    if spec.screening is None:
        return list(launches)
    left = snap.budget - snap.committed_of(False) - 2 * spec.stop.final_launches
    kept = []
    for launch in launches:
        full = fidelity(spec, launch.role, launch.params, launch.fixed_fidelity) == attrs.FULL
        if full and launch.role not in (attrs.BASELINE, attrs.FINAL):
            if left < launch.copies:
                continue
            left -= launch.copies
        kept.append(launch)
    return kept
