"""The space file's service-level sections: ``benchmark.goodput`` and ``benchmark.capacity``.

- ``goodput: {ttft_ms: 1000, tpot_ms: 50}``: every level's summary counts the requests per
  second that met every SLO (vllm bench serve's goodput; tuner/bench/summary.py), and
  ``goodput`` may be the objective or named in a limit.
- ``capacity: {limits: ["ttft_ms.p99 <= 1000"], ...}``: after every round's fixed levels
  the runner searches the largest concurrency at which every limit holds
  (tuner/bench/capacity.py, tuner/trial/capacity_round.py), and ``capacity`` may be the
  objective.

Kept apart from tuner/space/benchmark_spec.py so the ``benchmark:`` model stays readable;
benchmark_spec.py imports these models into ``BenchmarkSpec``.
"""

from __future__ import annotations

import math

from pydantic import Field, field_validator, model_validator

from tuner.space.limits import check_limits, parse_limit
from tuner.space.spec_base import StrictModel

SLO_NAMES = ("ttft_ms", "tpot_ms", "e2el_ms")
"""The per-request SLOs of vllm bench serve's ``--goodput``, in milliseconds."""


def check_goodput(value: dict[str, float] | None) -> dict[str, float] | None:
    """``benchmark.goodput``: known SLO names with positive limits in ms."""
    if value is None:
        return None
    if not value:
        raise ValueError(
            "goodput is empty: give at least one SLO in ms, e.g. {ttft_ms: 1000, tpot_ms: 50}"
        )
    for name, limit in value.items():
        if name not in SLO_NAMES:
            raise ValueError(
                f"unknown goodput SLO {name!r}; use {', '.join(SLO_NAMES)} (milliseconds, "
                "as vllm bench serve --goodput names them), e.g. {ttft_ms: 1000}"
            )
        if not (limit > 0 and math.isfinite(limit)):
            raise ValueError(f"goodput SLO {name}: the limit is a positive number of ms")
    return value


class CapacitySpec(StrictModel):
    """``benchmark.capacity``: the concurrency search within latency limits, per round."""

    limits: list[str] = Field(min_length=1)
    """Limits without a level, e.g. ``ttft_ms.p99 <= 1000`` (tuner/space/limits.py)."""
    start: int = Field(default=1, ge=1)
    max_concurrency: int = Field(default=1024, ge=1)
    max_levels: int = Field(default=12, ge=2)
    """Levels one search may measure (doubling then bisecting to one stream: about
    2 x log2(capacity) levels)."""
    max_seconds: float | None = Field(default=None, gt=0)
    """Wall time one search may take; the search stops at its last answer when spent."""
    requests_per_stream: int = Field(default=2, ge=1)
    """Each search level sends at least this many requests per stream (and
    benchmark.requests), so a p99 at high concurrency rests on more than one request."""

    @field_validator("limits")
    @classmethod
    def _readable_limits(cls, value: list[str]) -> list[str]:
        return check_limits(value, level="forbidden")  # ValueError: what to write instead

    @model_validator(mode="after")
    def _start_below_max(self) -> CapacitySpec:
        if self.start > self.max_concurrency:
            raise ValueError(
                f"start ({self.start}) is above max_concurrency ({self.max_concurrency}): "
                "lower start or raise max_concurrency"
            )
        return self


def check_slo_objective(
    metric: str,
    concurrency: int | None,
    subject_to: list[str],
    goodput: dict[str, float] | None,
    capacity: CapacitySpec | None,
) -> None:
    """The objective or a limit names goodput or capacity only when the benchmark
    measures it (ValueError naming the key to add)."""
    names_goodput = metric == "goodput" or any(
        parse_limit(t).metric == "goodput" for t in subject_to
    )
    if names_goodput and goodput is None:
        raise ValueError(
            "goodput is named (objective.metric or objective.subject_to) but "
            "benchmark.goodput sets no SLO: add e.g. benchmark.goodput: "
            "{ttft_ms: 1000, tpot_ms: 50} (milliseconds), or pick another metric"
        )
    if metric == "capacity":
        if capacity is None:
            raise ValueError(
                "objective.metric is capacity but benchmark.capacity is not set: add e.g. "
                "benchmark.capacity: {limits: ['ttft_ms.p99 <= 1000']}, or pick another metric"
            )
        if concurrency is not None:
            raise ValueError(
                "objective.concurrency is set but objective.metric is capacity, which is a "
                "concurrency itself: remove objective.concurrency"
            )
