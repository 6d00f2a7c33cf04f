"""The space file's ``objective:`` and ``objectives:`` sections, as written.

``objective`` is one metric at one level, with the limits a recommendation must meet;
``objectives`` lists several, and its first item fills ``objective`` when the file is read
(``merge_first_objective``) so that what reads one objective reads the first.
tuner/space/objectives.py resolves them (level and direction filled in).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from tuner.space.limits import check_limits
from tuner.space.spec_base import StrictModel
from tuner.vocabulary import OBJECTIVE_METRICS, is_load_metric


def known_metric(value: str) -> str:
    """``value`` when it is an objective metric; else ValueError listing them."""
    if value not in OBJECTIVE_METRICS:
        raise ValueError(f"unknown metric {value!r}; use one of: {', '.join(OBJECTIVE_METRICS)}")
    return value


def no_level_on_a_load(metric: str, concurrency: int | None, where: str) -> None:
    """A launch's load (``time_to_healthy_s``, ...) is one value per launch: a concurrency
    named with it would read as a level it depends on; ValueError with the fix."""
    if is_load_metric(metric) and concurrency is not None:
        raise ValueError(
            f"{where}: {metric} is one value per launch (its load), not per concurrency "
            "level: remove concurrency"
        )


class ObjectiveSpec(StrictModel):
    """What 'best' means: one metric at one concurrency level."""

    metric: str = "output_throughput"
    concurrency: int | None = None  # default: the first benchmark level
    direction: Literal["maximize", "minimize"] | None = None  # default: from the metric
    per_gpu: bool = False
    """Divide the metric by the GPUs each launch's layout uses (TP x PP,
    tuner/space/layout.py): layouts with different GPU counts compared per GPU."""
    subject_to: list[str] = Field(default_factory=list)
    """Limits a recommended configuration must meet, e.g. ``ttft_ms.p99@64 <= 2000``
    (tuner/space/limits.py parses them; tuner/study/facts/feasibility.py judges them)."""

    @property
    def label(self) -> str:
        """How trial lines name the objective's value: ``output_throughput/GPU`` per GPU."""
        return f"{self.metric}/GPU" if self.per_gpu else self.metric

    @field_validator("subject_to")
    @classmethod
    def _readable_limits(cls, value: list[str]) -> list[str]:
        return check_limits(value, level="required")  # ValueError: what to write instead

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        return known_metric(value)

    @model_validator(mode="after")
    def _load_has_no_level(self) -> ObjectiveSpec:
        no_level_on_a_load(self.metric, self.concurrency, "objective")
        return self


class ObjectiveItem(StrictModel):
    """One of several objectives (``objectives:``): a metric at a level, and its direction."""

    metric: str
    concurrency: int | None = None  # default: the first benchmark level
    direction: Literal["maximize", "minimize"] | None = None  # default: from the metric

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, value: str) -> str:
        return known_metric(value)

    @model_validator(mode="after")
    def _load_has_no_level(self) -> ObjectiveItem:
        no_level_on_a_load(self.metric, self.concurrency, "objectives")
        return self


_OBJECTIVE_FIELDS = ("metric", "concurrency", "direction")


def merge_first_objective(raw: Any) -> Any:
    """The raw space with ``objectives[0]``'s fields copied into ``objective`` (its
    ``subject_to`` kept), so what reads one objective reads the first of several
    (tuner/space/objectives.py resolves them all); ValueError, with the fix, for a list
    that is not one."""
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
    if isinstance(objective, dict) and any(k in objective for k in _OBJECTIVE_FIELDS):
        given = ", ".join(f"objective.{k}" for k in _OBJECTIVE_FIELDS if k in objective)
        raise ValueError(
            f"objectives and {given} are both set: use one of them (objectives: for several, "
            "objective: for one); objective.subject_to may stay, it holds the limits of either"
        )
    first = items[0]
    if not isinstance(objective, dict) or not isinstance(first, dict):
        return raw
    if first.get("metric") not in OBJECTIVE_METRICS:
        return raw  # objectives[0].metric's own error says what to write
    merged = {**objective, **{k: first[k] for k in _OBJECTIVE_FIELDS if first.get(k) is not None}}
    return {**raw, "objective": merged}
