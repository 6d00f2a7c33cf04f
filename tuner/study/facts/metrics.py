"""Reading a metric from the stored levels: the one home the objectives and the limits share.

A launch's value of a metric at a level is the mean over its rounds of that metric in the
level's stored summary (``tuner_levels.summary``, the fixed levels only: a capacity
search's levels are not the objective's or a limit's); ``@*`` takes each round's worst
level. tuner/study/facts/feasibility.py reads the limits of ``objective.subject_to`` this
way and tuner/study/facts/objective_values.py the objectives of ``objectives:``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner import stats
from tuner.launcher.load_metrics import load_metric_value
from tuner.storage import Store
from tuner.vocabulary import is_load_metric

Rounds = list[Mapping[Any, Mapping[str, Any]]]
"""One launch's rounds in order, each its level summaries by concurrency."""


@dataclass(frozen=True)
class MetricRead:
    """Which value of a launch to read: a metric at a level (``"*"``: each round's worst)."""

    metric: str
    level: int | str | None
    worst: Callable[[list[float]], float] = max


def launch_rounds(store: Store, launch_ids: Sequence[int]) -> dict[int, Rounds]:
    """Per launch, its rounds in order, each the level summaries by concurrency (the fixed
    levels only)."""
    rounds: dict[int, dict[int, dict[int, Mapping[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for level in store.levels_of(list(launch_ids)):
        rounds[level.launch_id][level.round][level.concurrency] = level.summary
    return {
        launch_id: [by_round[r] for r in sorted(by_round)] for launch_id, by_round in rounds.items()
    }


def launch_values(
    store: Store, launch_ids: Sequence[int], reads: Sequence[MetricRead]
) -> dict[int, list[stats.LaunchEstimate | None]]:
    """Per launch, per read: the estimate over its rounds (None: a NaN or missing value);
    a load's read, its one value (LaunchEstimate of n=1)."""
    rounds = launch_rounds(store, launch_ids)
    loads: dict[int, dict[str, float | None]] = {}
    load_reads = [r.metric for r in reads if is_load_metric(r.metric)]
    if load_reads:
        for row in store.launches_by_id(list(rounds)):
            loads[row.id] = {
                m: load_metric_value(m, row.seconds_to_healthy, row.load_phases) for m in load_reads
            }

    def read(launch_id: int, by_round: Rounds, r: MetricRead) -> stats.LaunchEstimate | None:
        if not is_load_metric(r.metric):
            return metric_estimate(by_round, r.metric, r.level, worst=r.worst)
        value = loads.get(launch_id, {}).get(r.metric)
        return stats.launch_estimate([value]) if value is not None else None

    return {
        launch_id: [read(launch_id, by_round, r) for r in reads]
        for launch_id, by_round in rounds.items()
    }


def metric_estimate(
    by_round: Rounds,
    metric: str,
    level: int | str | None,
    *,
    worst: Callable[[list[float]], float] = max,
) -> stats.LaunchEstimate | None:
    """One launch's estimate of ``metric`` at ``level`` from its rounds (``launch_rounds``);
    ``level`` ``"*"``: each round's worst level, as ``worst`` picks it. None when a round
    lacks the level or the metric: a failed level is never a value."""
    per_round = []
    for levels in by_round:
        wanted = list(levels.values()) if level == "*" else [levels.get(level)]
        values = [summary_metric(s, metric) if s is not None else math.nan for s in wanted]
        if not values or any(math.isnan(v) for v in values):
            return None
        per_round.append(worst(values))
    return stats.launch_estimate(per_round) if per_round else None


def summary_metric(summary: Mapping[str, Any], metric: str) -> float:
    """A metric (``FAMILY_STAT`` spelling) from a stored level summary; NaN when absent."""
    if metric in summary:
        value = summary[metric]
    else:
        family, _, stat = metric.rpartition("_")
        dist = summary.get(family)
        value = dist.get(stat) if isinstance(dist, Mapping) else None
    return math.nan if value is None else float(value)
