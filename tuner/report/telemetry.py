"""Telemetry over time for the report: GPU power, clocks and utilisation, or the host's.

For the launches the report names (baseline, best, recommended), the raw samples of
``tuner_samples`` become one chart per figure with one line per launch, time counted
from the launch's first sample. GPU figures are the mean over the launch's GPUs at each
sampling instant; a launch without GPU samples (no NVML) falls back to the host: the
server's CPU (percent of one core, summed over its process tree) and memory.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.storage import LaunchRow, Store

MAX_POINTS = 240
"""Samples per line at most (bucket means beyond): the file stays small."""

GPU_FIGURES = (
    ("power_w", "GPU power", "W"),
    ("sm_clock_mhz", "GPU SM clock", "MHz"),
    ("util_pct", "GPU utilisation", "%"),
)
HOST_FIGURES = (
    ("tree_cpu_pct", "Server CPU (process tree)", "% of one core"),
    ("tree_rss_mib", "Server memory (process tree RSS)", "MiB"),
    ("host_cpu_pct", "Host CPU (all cores)", "%"),
)


@dataclass(frozen=True)
class Series:
    """One line: (x, y) points and its legend label."""

    label: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class TelemetryChart:
    """One figure over time (seconds since the launch's first sample)."""

    title: str
    unit: str
    series: tuple[Series, ...]


def telemetry_charts(
    store: Store, launches: Sequence[tuple[str, LaunchRow]]
) -> tuple[str, tuple[TelemetryChart, ...]]:
    """("gpu" | "host" | "none", the charts) for the labelled launches."""
    samples = {label: store.samples(row.id) for label, row in launches}
    kind = "gpu" if any(s.kind == "gpu" for rows in samples.values() for s in rows) else "host"
    figures = GPU_FIGURES if kind == "gpu" else HOST_FIGURES
    charts = []
    for key, title, unit in figures:
        series = []
        for label, rows in samples.items():
            by_time: dict[float, list[float]] = defaultdict(list)
            for s in rows:
                value = s.data.get(key)
                if s.kind == kind and isinstance(value, (int, float)) and math.isfinite(value):
                    by_time[s.time_s].append(float(value))
            if not by_time:
                continue
            start = min(by_time)
            points = [(t - start, sum(v) / len(v)) for t, v in sorted(by_time.items())]
            series.append(Series(label=label, points=downsample(points)))
        if series:
            charts.append(TelemetryChart(title=title, unit=unit, series=tuple(series)))
    return (kind if charts else "none"), tuple(charts)


def downsample(
    points: Sequence[tuple[float, float]], limit: int = MAX_POINTS
) -> tuple[tuple[float, float], ...]:
    """At most ``limit`` points: consecutive buckets averaged (x and y alike)."""
    if len(points) <= limit:
        return tuple(points)
    size = math.ceil(len(points) / limit)
    out = []
    for i in range(0, len(points), size):
        bucket = points[i : i + size]
        out.append(
            (sum(p[0] for p in bucket) / len(bucket), sum(p[1] for p in bucket) / len(bucket))
        )
    return tuple(out)
