"""Each objective of a several-objective study, per launch and per configuration.

Like the limits (tuner/study/facts/feasibility.py): a launch's value of an objective is the mean
over its rounds of the metric at the objective's level, read from the stored level
summaries; a configuration's launches are pooled by stats.config_estimate with the
between-launch noise of *that metric* (measured over every configuration launched more
than once, the prior before). A launch whose level had no successful request (NaN) is
left out of that objective's estimate; a configuration left with no launch has none.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuner import stats
from tuner.space.objectives import Objective
from tuner.storage import LaunchRow, Store
from tuner.study.facts.metrics import MetricRead, launch_values


@dataclass(frozen=True)
class ObjectiveEstimates:
    """Per configuration hash, one estimate per objective (None: nothing measured)."""

    objectives: tuple[Objective, ...]
    per_config: Mapping[str, tuple[stats.ConfigEstimate | None, ...]]
    noise: tuple[stats.NoiseEstimate | None, ...]

    def complete(self, config_hash: str) -> tuple[stats.ConfigEstimate, ...] | None:
        """The configuration's estimates when every objective has one, else None."""
        found = self.per_config.get(config_hash)
        if found is None or any(e is None for e in found):
            return None
        return tuple(e for e in found if e is not None)


def estimate_objectives(
    store: Store, objectives: Sequence[Objective], groups: Mapping[str, Sequence[LaunchRow]]
) -> ObjectiveEstimates:
    """Each configuration (``groups``: its completed launches by hash) on every objective."""
    ids = [row.id for rows in groups.values() for row in rows]
    values = objective_values(store, ids, objectives)
    per_config: dict[str, list[stats.ConfigEstimate | None]] = defaultdict(list)
    noises = []
    for i in range(len(objectives)):
        launches: dict[str, list[stats.LaunchEstimate]] = {}
        for key, rows in groups.items():
            measured = [values[row.id][i] for row in rows if row.id in values]
            launches[key] = [e for e in measured if e is not None]
        noise = stats.between_launch_variance(launches.values())
        noises.append(noise)
        for key, found in launches.items():
            estimate = (
                stats.config_estimate(found, noise or stats.NoiseEstimate.prior())
                if found
                else None
            )
            per_config[key].append(estimate)
    return ObjectiveEstimates(
        tuple(objectives), {k: tuple(v) for k, v in per_config.items()}, tuple(noises)
    )


def objective_values(
    store: Store, launch_ids: Sequence[int], objectives: Sequence[Objective]
) -> dict[int, list[stats.LaunchEstimate | None]]:
    """Per launch, per objective: the estimate over its rounds (None: NaN or missing)."""
    reads = [MetricRead(o.metric, o.concurrency) for o in objectives]
    return launch_values(store, launch_ids, reads)


def launch_means(store: Store, launch_id: int, objectives: Sequence[Objective]) -> list[float]:
    """One launch's value of each objective (NaN where it has none): what optuna is told."""
    found = objective_values(store, [launch_id], objectives).get(launch_id)
    if found is None:
        return [math.nan] * len(objectives)
    return [e.mean if e is not None else math.nan for e in found]
