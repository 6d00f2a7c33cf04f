"""The report's figures per launch and per named configuration, read from the store.

The history of measured launches in trial order, throughput and latency against
concurrency for the baseline, best and recommended configurations (every completed
launch and round averaged), and where each launch's time went (load, warm-up, benchmark,
stop, the rest). Values are the store's, where secrets are already redacted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.space.settings import changed_from_defaults
from tuner.storage import LaunchRow, LaunchStatus, Store
from tuner.views.best import ConfigEntry


@dataclass(frozen=True)
class HistoryPoint:
    """One measured launch in the order of trials."""

    trial: int
    role: str
    status: str
    """complete, or pruned (measured for fewer rounds)."""
    value: float
    stderr: float | None
    changed: str
    fidelity: str | None = None
    """``screen`` for a screening launch (random weights: it searched, never decided)."""


@dataclass(frozen=True)
class LevelPoint:
    """A configuration at one concurrency, averaged over its launches and rounds."""

    concurrency: int
    throughput: float | None
    ttft_p50: float | None
    ttft_p99: float | None
    tpot_p50: float | None
    tpot_p99: float | None


@dataclass(frozen=True)
class ConfigCurve:
    """Throughput and latency against concurrency for one named configuration."""

    label: str
    trial: int | None
    points: tuple[LevelPoint, ...]


@dataclass(frozen=True)
class LaunchTiming:
    """Where one launch's time went, in seconds (None: not recorded)."""

    trial: int | None
    role: str
    status: str
    load_s: float
    warmup_s: float
    benchmark_s: float
    stop_s: float
    other_s: float


def changed_label(params: Mapping[str, Any]) -> str:
    """The params not at ``default`` as ``name=value`` words, or "defaults"."""
    return " ".join(f"{k}={v}" for k, v in changed_from_defaults(params).items()) or "defaults"


def history(launches: Iterable[LaunchRow]) -> tuple[HistoryPoint, ...]:
    """Every measured launch of a trial, in trial order."""
    points = []
    for row in launches:
        if row.trial_number is None or row.objective_mean is None:
            continue
        if row.status not in (LaunchStatus.COMPLETE, LaunchStatus.PRUNED):
            continue
        points.append(
            HistoryPoint(
                trial=row.trial_number,
                role=row.role,
                status=row.status,
                value=row.objective_mean,
                stderr=row.objective_se,
                changed=changed_label(row.params),
                fidelity=row.fidelity,
            )
        )
    return tuple(sorted(points, key=lambda p: p.trial))


def curves(
    store: Store, launches: Sequence[LaunchRow], named: Sequence[tuple[str, ConfigEntry]]
) -> tuple[ConfigCurve, ...]:
    """Throughput and TTFT/TPOT p50 and p99 at each concurrency, averaged over the completed
    launches (every round) of the baseline, best and recommended configurations."""
    out = []
    for label, entry in named:
        rows = [
            r
            for r in launches
            if r.config_hash == entry.config and r.status == LaunchStatus.COMPLETE
        ]
        by_level: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
        for row in rows:
            for level in store.levels(row.id):
                by_level[level.concurrency].append(level.summary)
        points = tuple(
            LevelPoint(
                concurrency=c,
                throughput=_mean(s.get("output_throughput") for s in summaries),
                ttft_p50=_mean(_stat(s, "ttft_ms", "p50") for s in summaries),
                ttft_p99=_mean(_stat(s, "ttft_ms", "p99") for s in summaries),
                tpot_p50=_mean(_stat(s, "tpot_ms", "p50") for s in summaries),
                tpot_p99=_mean(_stat(s, "tpot_ms", "p99") for s in summaries),
            )
            for c, summaries in sorted(by_level.items())
        )
        if points:
            out.append(ConfigCurve(label=label, trial=entry.trial, points=points))
    return tuple(out)


def _stat(summary: Mapping[str, Any], family: str, stat: str) -> Any:
    values = summary.get(family)
    return values.get(stat) if isinstance(values, Mapping) else None


def _mean(values: Iterable[Any]) -> float | None:
    kept = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else None


def timings(store: Store, launches: Sequence[LaunchRow]) -> tuple[LaunchTiming, ...]:
    """Each finished launch's time: load (to healthy; to the failure when it never was),
    warm-up and connection setup, benchmark (the measured windows), stop, and the rest."""
    out = []
    for row in launches:
        if row.finished_at is None or row.trial_number is None:
            continue
        total = max(0.0, (row.finished_at - row.started_at).total_seconds())
        # The capacity search's levels are benchmark time too (not curve points).
        levels = [*store.levels(row.id), *store.levels(row.id, capacity_search=True)]
        benchmark = sum(level.duration_s for level in levels)
        warmup = sum(
            max(0.0, float(level.summary.get("wall_s", level.duration_s)) - level.duration_s)
            for level in levels
        )
        stop = float((row.cleanup or {}).get("seconds") or 0.0)
        if row.seconds_to_healthy is not None:
            load = row.seconds_to_healthy
        else:  # never healthy: the time until it failed is the load that did not finish
            load = max(0.0, total - stop - benchmark - warmup)
        other = max(0.0, total - load - warmup - benchmark - stop)
        out.append(
            LaunchTiming(
                trial=row.trial_number,
                role=row.role,
                status=row.status,
                load_s=load,
                warmup_s=warmup,
                benchmark_s=benchmark,
                stop_s=stop,
                other_s=other,
            )
        )
    return tuple(out)
