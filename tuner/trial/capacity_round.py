"""The capacity search inside a launch: once per round, after the fixed levels.

With ``benchmark.capacity`` in the space file, every round of a launch ends with
tuner/bench/capacity.find_capacity against the live server: double the concurrency from
``start`` while every limit holds, then bisect to one stream, within the level and time
budgets. Once per round rather than once per launch: each round then gives the capacity
its own value, so ``objective.metric: capacity`` has round-to-round (within-launch) noise
like any other metric, and the statistics (tuner/stats/) need no special case.

The levels it measures are stored like the fixed ones but flagged ``capacity_search``
(tuner/storage), so analysis, limits, the report and ``tuner best`` never read them as
``benchmark.concurrency`` levels; each round's result (capacity, the first level that
broke a limit, the knee, the figures at the capacity) goes to the launch's ``capacity``
column, one entry per round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tuner.bench.capacity import CapacityResult, find_capacity
from tuner.bench.summary import LevelSummary
from tuner.space.limits import parse_limit
from tuner.space.spec import BenchmarkSpec


def search_round(
    benchmark: BenchmarkSpec, measure: Callable[[int, int], LevelSummary]
) -> CapacityResult:
    """One capacity search of ``benchmark.capacity``; ``measure(concurrency, requests)``
    measures, stores and returns one level. Each level sends ``benchmark.requests``, or
    ``requests_per_stream`` per stream when that is more."""
    spec = benchmark.capacity
    assert spec is not None, "only a benchmark with a capacity section searches it"
    return find_capacity(
        lambda c: measure(c, max(benchmark.requests, spec.requests_per_stream * c)),
        [parse_limit(text, level="forbidden") for text in spec.limits],
        start=spec.start,
        max_concurrency=spec.max_concurrency,
        max_levels=spec.max_levels,
        budget_s=spec.max_seconds,
    )


def capacity_value(found: CapacityResult) -> float:
    """The round's objective value: the capacity in streams; 0 when even ``start`` broke a
    limit (the server serves no stream within the limits, as far as measured)."""
    return float(found.capacity or 0)


def round_record(found: CapacityResult, round_index: int) -> dict[str, Any]:
    """What the launch's ``capacity`` column keeps of one round (JSON)."""
    return {"round": round_index, **found.to_dict()}


def record_capacity(record: Mapping[str, Any]) -> int:
    """A stored round's capacity (0 when no level held)."""
    return int(record.get("capacity") or 0)
