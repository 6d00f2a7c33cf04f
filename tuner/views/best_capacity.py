"""`tuner best`'s capacity: for the answer's configurations, what the capacity searches found.

With ``benchmark.capacity`` in the space file, each round of a launch ends with a capacity
search (tuner/trial/capacity_round.py) whose result is stored with the launch. For the
recommended, best and baseline configurations this gathers them: the capacity (the median
over every search of the configuration, and each value), the throughput and latencies at
the capacity (means over the searches), the first concurrency that broke a limit, and
the knee (the median over the searches that measured one; None when throughput still
grew at the last level of every search).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.space.spec import Space
from tuner.storage import LaunchStatus, Store
from tuner.study.facts import analysis
from tuner.study.facts.metrics import summary_metric
from tuner.trial.capacity_round import record_capacity

AT_CAPACITY = (
    ("output_throughput", "output tok/s", "{:,.1f}"),
    ("ttft_ms_p99", "TTFT p99", "{:,.0f} ms"),
    ("tpot_ms_mean", "TPOT mean", "{:,.1f} ms"),
    ("itl_ms_mean", "ITL mean", "{:,.1f} ms"),
    ("e2el_ms_p99", "E2EL p99", "{:,.0f} ms"),
)
"""The figures at the capacity shown, (metric, label, format)."""


@dataclass(frozen=True)
class CapacityFigures:
    """One configuration's capacity searches, summarised."""

    trial: int | None
    capacity: float
    """The median capacity over its searches, in concurrent streams."""
    capacities: tuple[int, ...]
    """Every search's capacity (0: even the first level broke a limit), in launch order."""
    first_broken: int | None
    """The median first concurrency that broke a limit; None when none did."""
    knee: float | None
    knees_found: int
    at_capacity: Mapping[str, float | None]
    """AT_CAPACITY's metrics, each the mean over the searches that held somewhere."""

    def to_json(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "capacity": self.capacity,
            "capacities": list(self.capacities),
            "first_broken": self.first_broken,
            "knee": self.knee,
            "knees_found": self.knees_found,
            "searches": len(self.capacities),
            "at_capacity": dict(self.at_capacity),
        }

    def sentence(self) -> str:
        """``capacity 12 streams (12, 12, 12): 5,420.1 output tok/s, TTFT p99 6 ms, ...``."""
        spread = ", ".join(str(c) for c in self.capacities)
        text = f"capacity {self.capacity:g} streams ({spread})"
        figures = [
            f"{fmt.format(self.at_capacity[name])} {label}"
            if label == "output tok/s"
            else f"{label} {fmt.format(self.at_capacity[name])}"
            for name, label, fmt in AT_CAPACITY
            if self.at_capacity.get(name) is not None
        ]
        if figures:
            text += ": " + ", ".join(figures)
        if self.first_broken is not None:
            text += f"; a limit broke at {self.first_broken}"
        if self.knee is not None:
            text += f"; knee at {self.knee:g} streams ({self.knees_found} of "
            text += f"{len(self.capacities)} searches)"
        else:
            text += "; no knee (throughput still grew at the last level)"
        return text


@dataclass(frozen=True)
class CapacityAnswer:
    """The capacity of the answer's configurations under ``limits``."""

    limits: tuple[str, ...]
    entries: Mapping[str, CapacityFigures]
    """By label: recommended, best, baseline (those that have a search)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "limits": list(self.limits),
            **{label: figures.to_json() for label, figures in self.entries.items()},
        }

    def lines(self) -> list[str]:
        out = [f"Capacity within {', '.join(self.limits)}:"]
        for label, figures in self.entries.items():
            out.append(f"  {label} (trial {figures.trial}): {figures.sentence()}")
        return out


def capacity_answer(
    store: Store, space: Space, configs: Mapping[str, analysis.ConfigResult | None]
) -> CapacityAnswer | None:
    """The capacity searches of ``configs`` (label -> configuration); None without
    ``benchmark.capacity`` or without any search stored."""
    spec = space.spec.benchmark.capacity
    if spec is None:
        return None
    rows = [r for r in store.launches(space.study_name, status=LaunchStatus.COMPLETE) if r.capacity]
    entries: dict[str, CapacityFigures] = {}
    for label, config in configs.items():
        if config is None:
            continue
        searches = [
            record
            for r in rows
            if r.config_hash == config.config_hash and r.trial_number in config.trials
            for record in r.capacity or ()
        ]
        if searches:
            entries[label] = figures_of(config.trials[0] if config.trials else None, searches)
    return CapacityAnswer(tuple(spec.limits), entries) if entries else None


def figures_of(trial: int | None, searches: Sequence[Mapping[str, Any]]) -> CapacityFigures:
    """Summarise stored searches (tuner/trial/capacity_round.round_record's shape)."""
    capacities = tuple(record_capacity(s) for s in searches)
    broken = [int(s["first_broken"]) for s in searches if s.get("first_broken") is not None]
    knees = [float(s["knee"]) for s in searches if s.get("knee") is not None]
    held = [s["at_capacity"] for s in searches if s.get("at_capacity")]
    return CapacityFigures(
        trial=trial,
        capacity=float(statistics.median(capacities)),
        capacities=capacities,
        first_broken=int(statistics.median(broken)) if broken else None,
        knee=float(statistics.median(knees)) if knees else None,
        knees_found=len(knees),
        at_capacity={name: _mean_of(held, name) for name, _, _ in AT_CAPACITY},
    )


def _mean_of(summaries: Sequence[Mapping[str, Any]], metric: str) -> float | None:
    values = [summary_metric(s, metric) for s in summaries]
    finite = [v for v in values if v == v]  # NaN != NaN
    return statistics.fmean(finite) if finite else None
