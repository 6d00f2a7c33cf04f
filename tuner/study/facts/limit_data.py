"""Each limit's measurements, as the limit steering fits them (tuner/study/policy/steering.py).

For every limit of ``objective.subject_to`` with a positive bound: each measured launch's
value of the limit's metric (its mean over rounds at the limit's level, as the limits are
judged: tuner/study/facts/feasibility.py) with its params, and that metric's noise between
launches, pooled over repeated configurations (the prior before any). A metric that is 0
(an error rate with no error) has no logarithm: such launches are left out, and a limit
with no positive value on record has no data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from tuner import stats
from tuner.space.limits import MetricLimit
from tuner.space.spec import Scalar, Space
from tuner.storage import LaunchStatus, Store
from tuner.study.facts import feasibility


@dataclass(frozen=True)
class LimitData:
    """One limit and every measured launch's value of its metric."""

    limit: MetricLimit
    launches: tuple[tuple[Mapping[str, Scalar], stats.LaunchEstimate], ...]
    noise: stats.NoiseEstimate


def limit_data(store: Store, space: Space) -> tuple[LimitData, ...]:
    """Every limit's measurements from the study's launches; empty without limits or data."""
    limits = feasibility.study_limits(space)
    if not limits:
        return ()
    rows = [
        r
        for r in store.launches(space.study_name)
        if r.status in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED)
    ]
    values = feasibility.limit_values(store, [r.id for r in rows], limits)
    out = []
    for i, limit in enumerate(limits):
        if not limit.value > 0:
            continue  # no logarithm: nothing to compare a predicted log value with
        launches = [(r, values[r.id][i]) for r in rows if r.id in values]
        measured = [(r, e) for r, e in launches if e is not None and e.mean > 0]
        if not measured:
            continue
        groups: dict[str, list[stats.LaunchEstimate]] = defaultdict(list)
        for r, e in measured:
            groups[r.config_hash].append(e)
        noise = stats.between_launch_variance(groups.values()) or stats.NoiseEstimate.prior()
        out.append(LimitData(limit, tuple((dict(r.params), e) for r, e in measured), noise))
    return tuple(out)
