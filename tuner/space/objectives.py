"""What a study optimises: one objective (``objective:``) or several (``objectives:``).

A space file names either one objective, ``objective: {metric, concurrency, direction}``,
or several, ``objectives:`` a list of such items (docs/space-file.md). With several, the
first item also fills ``objective`` when the file is read (``merge_first_objective``), so
what reads one objective (the runner's per-round value, `tuner trials`) reads the first;
``study_objectives`` lists them all, resolved (level and direction filled in).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tuner.space.spec import OBJECTIVE_METRICS, SpaceSpec

_FIELDS = ("metric", "concurrency", "direction")


@dataclass(frozen=True)
class Objective:
    """One objective, resolved: a metric at a benchmark level, maximised or minimised."""

    metric: str
    concurrency: int
    direction: Literal["maximize", "minimize"]

    @property
    def name(self) -> str:
        """``output_throughput@64``: how tables, optuna-dashboard and sentences name it."""
        return f"{self.metric}@{self.concurrency}"

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


def merge_first_objective(raw: Any) -> Any:
    """The raw space with ``objectives[0]``'s fields copied into ``objective`` (its
    ``subject_to`` kept); ValueError, with the fix, for a list that is not one."""
    if not isinstance(raw, dict) or raw.get("objectives") is None:
        return raw
    items = raw["objectives"]
    if not isinstance(items, list):
        raise ValueError(
            "objectives: write a list of items {metric, concurrency, direction}, e.g. "
            "[{metric: output_throughput, concurrency: 1}, {metric: output_throughput, "
            "concurrency: 64}]"
        )
    if len(items) < 2:
        raise ValueError(
            f"objectives lists {len(items)} item(s): several objectives need at least 2; for "
            "one, write objective: {metric: ..., concurrency: ...} instead"
        )
    objective = raw.get("objective") or {}
    if isinstance(objective, dict) and any(k in objective for k in _FIELDS):
        given = ", ".join(f"objective.{k}" for k in _FIELDS if k in objective)
        raise ValueError(
            f"objectives and {given} are both set: use one of them (objectives: for several, "
            "objective: for one); objective.subject_to may stay, it holds the limits of either"
        )
    first = items[0]
    if not isinstance(objective, dict) or not isinstance(first, dict):
        return raw
    if first.get("metric") not in OBJECTIVE_METRICS:
        return raw  # objectives[0].metric's own error says what to write
    merged = {**objective, **{k: first[k] for k in _FIELDS if first.get(k) is not None}}
    return {**raw, "objective": merged}
