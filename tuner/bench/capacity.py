"""Capacity under an SLO: the most concurrent streams one server serves within latency limits.

``find_capacity(measure, limits)`` measures a level, doubles the concurrency while every
limit holds, then bisects between the last level that held and the first that broke,
until the two are one stream apart (``resolution``), a level budget or a time budget is
spent, or ``max_concurrency`` holds. It is guidellm's and vLLM auto_tune's goodput search
turned on concurrency: each level is measured once, so on a noisy server the answer is
good to the noise of one level (measure the capacity twice to see it).

Also reported, from the same levels: the **knee**, the lowest concurrency after which
throughput stops growing (each doubling beyond it adds less than ``KNEE_GAIN`` per
doubling, as the seeds saw between 256 and 1,024 streams); None when throughput still
grows at the last level measured.

Nothing here talks to a server: ``measure(concurrency)`` does (tuner/bench_command.py
builds it from the benchmark engine), so the search is tested on synthetic servers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tuner.bench.summary import LevelSummary
from tuner.space.limits import MetricLimit

KNEE_GAIN = 0.10
"""Throughput growth per doubling of concurrency below which the curve has flattened."""

Stop = Literal["resolved", "max_concurrency", "level_budget", "time_budget", "start_broke"]


@dataclass(frozen=True)
class CapacityLevel:
    """One measured level: its summary and the limits it broke (empty: it held)."""

    concurrency: int
    summary: LevelSummary
    broken: tuple[str, ...]
    """Each broken limit with what was measured, e.g. ``ttft_ms.p99 <= 1000 (1532)``."""

    @property
    def held(self) -> bool:
        return not self.broken


@dataclass(frozen=True)
class CapacityResult:
    """What the search found: the capacity, the level there, the knee, and why it stopped."""

    limits: tuple[MetricLimit, ...]
    levels: tuple[CapacityLevel, ...]
    """In the order they were measured."""
    capacity: int | None
    """The largest concurrency measured at which every limit held; None if none held."""
    first_broken: int | None
    """The smallest concurrency measured at which a limit broke; None if none broke."""
    knee: int | None
    stop: Stop

    @property
    def at_capacity(self) -> CapacityLevel | None:
        return next((lv for lv in self.levels if lv.concurrency == self.capacity), None)

    def sentence(self) -> str:
        """One line for a person: the capacity, the figures there, and what bounds it."""
        limits = ", ".join(limit.text for limit in self.limits)
        if self.capacity is None:
            first = self.levels[0]
            return (
                f"no capacity within {limits}: concurrency {first.concurrency} already "
                f"breaks {'; '.join(first.broken)}"
            )
        at = self.at_capacity
        assert at is not None
        s = at.summary
        text = (
            f"capacity {self.capacity} concurrent streams within {limits}: "
            f"{s.output_throughput:,.1f} output tok/s, TTFT p99 {s.ttft_ms.p99:,.0f} ms, "
            f"ITL mean {s.itl_ms.mean:,.1f} ms"
        )
        if self.first_broken is not None:
            broke = next(lv for lv in self.levels if lv.concurrency == self.first_broken)
            text += f"; at {self.first_broken}: {'; '.join(broke.broken)}"
        return text + _STOP_WORDS[self.stop]

    def to_dict(self) -> dict[str, Any]:
        at = self.at_capacity
        return {
            "limits": [limit.text for limit in self.limits],
            "capacity": self.capacity,
            "first_broken": self.first_broken,
            "knee": self.knee,
            "stop": self.stop,
            "at_capacity": None if at is None else at.summary.to_dict(),
            "levels": [
                {
                    "concurrency": lv.concurrency,
                    "held": lv.held,
                    "broken": list(lv.broken),
                    "output_throughput": lv.summary.output_throughput,
                    **{
                        limit.metric: _json(lv.summary.metric(limit.metric))
                        for limit in self.limits
                    },
                }
                for lv in self.levels
            ],
        }


_STOP_WORDS: dict[Stop, str] = {
    "resolved": "",
    "max_concurrency": " (the largest concurrency allowed held: the capacity may be higher)",
    "level_budget": " (the level budget ran out before the search was one stream apart)",
    "time_budget": " (the time budget ran out before the search was one stream apart)",
    "start_broke": "",
}


def broken_limits(summary: LevelSummary, limits: Sequence[MetricLimit]) -> tuple[str, ...]:
    """The limits ``summary`` breaks, each with the value measured."""
    out = []
    for limit in limits:
        value = summary.metric(limit.metric)
        if not limit.holds(value):
            out.append(f"{limit.text} ({value:,.4g})")
    return tuple(out)


def find_capacity(
    measure: Callable[[int], LevelSummary],
    limits: Sequence[MetricLimit],
    *,
    start: int = 1,
    max_concurrency: int = 1024,
    resolution: int = 1,
    max_levels: int = 16,
    budget_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> CapacityResult:
    """Double from ``start`` while every limit holds, then bisect (see the module)."""
    if not limits:
        raise ValueError("a capacity search needs at least one limit")
    if not 1 <= start <= max_concurrency:
        raise ValueError("start must be between 1 and max_concurrency")
    began = clock()
    measured: dict[int, CapacityLevel] = {}
    order: list[CapacityLevel] = []

    def run(concurrency: int) -> CapacityLevel:
        level = measured.get(concurrency)
        if level is None:
            summary = measure(concurrency)
            level = CapacityLevel(concurrency, summary, broken_limits(summary, limits))
            measured[concurrency] = level
            order.append(level)
        return level

    def out_of_budget() -> Stop | None:
        if len(order) >= max_levels:
            return "level_budget"
        if budget_s is not None and clock() - began >= budget_s:
            return "time_budget"
        return None

    good: int | None = None
    bad: int | None = None
    stop: Stop | None = None
    concurrency = start
    while True:  # double until a limit breaks
        if run(concurrency).held:
            good = concurrency
        else:
            bad = concurrency
            break
        if concurrency >= max_concurrency:
            stop = "max_concurrency"
            break
        stop = out_of_budget()
        if stop:
            break
        concurrency = min(concurrency * 2, max_concurrency)
    if good is None:
        stop = "start_broke"
    while stop is None and good is not None and bad is not None:  # bisect
        if bad - good <= resolution:
            stop = "resolved"
            break
        stop = out_of_budget()
        if stop:
            break
        middle = (good + bad) // 2
        if run(middle).held:
            good = middle
        else:
            bad = middle
    assert stop is not None
    return CapacityResult(
        limits=tuple(limits),
        levels=tuple(order),
        capacity=good,
        first_broken=bad,
        knee=knee(
            [(lv.concurrency, lv.summary.output_throughput) for lv in order if lv.summary.completed]
        ),
        stop=stop,
    )


def knee(points: Sequence[tuple[int, float]], *, gain: float = KNEE_GAIN) -> int | None:
    """The lowest concurrency after which throughput grows by less than ``gain`` per
    doubling at every larger level measured; None if it still grows at the last level."""
    curve = sorted((c, t) for c, t in points if math.isfinite(t) and t > 0)
    for i, (c, t) in enumerate(curve):
        later = curve[i + 1 :]
        if not later:
            return None
        if all(later_t / t - 1 < gain * math.log2(later_c / c) for later_c, later_t in later):
            return c
    return None


def _json(value: float) -> float | None:
    return None if math.isnan(value) else value
