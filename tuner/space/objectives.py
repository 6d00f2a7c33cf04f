"""What a study optimises: one objective (``objective:``) or several (``objectives:``).

A space file names either one objective, ``objective: {metric, concurrency, direction}``,
or several, ``objectives:`` a list of such items (docs/space-file.md). With several, the
first item also fills ``objective`` when the file is read (tuner/space/objective_spec.py), so
what reads one objective (the runner's per-round value, `tuner trials`) reads the first;
``study_objectives`` lists them all, resolved (level and direction filled in).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tuner.space.spec import SpaceSpec
from tuner.vocabulary import OBJECTIVE_METRICS, is_load_metric


@dataclass(frozen=True)
class Objective:
    """One objective, resolved: a metric at a benchmark level, maximised or minimised."""

    metric: str
    concurrency: int
    direction: Literal["maximize", "minimize"]

    @property
    def name(self) -> str:
        """``output_throughput@64``: how tables, optuna-dashboard and sentences name it; a
        launch's load (``time_to_healthy_s``) by its metric alone, as it has no level."""
        return self.metric if is_load_metric(self.metric) else f"{self.metric}@{self.concurrency}"

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "concurrency": self.concurrency, "direction": self.direction}


def study_objectives(spec: SpaceSpec) -> tuple[Objective, ...]:
    """Every objective of the space, in the file's order (one without ``objectives:``)."""
    first_level = spec.benchmark.concurrency[0]
    if not spec.objectives:
        return (Objective(spec.objective.metric, spec.objective_concurrency, spec.direction),)
    return tuple(
        Objective(
            item.metric,
            item.concurrency or first_level,
            item.direction or OBJECTIVE_METRICS[item.metric],
        )
        for item in spec.objectives
    )


def is_multi_objective(spec: SpaceSpec) -> bool:
    """Whether the space lists several objectives (a Pareto study)."""
    return bool(spec.objectives)
