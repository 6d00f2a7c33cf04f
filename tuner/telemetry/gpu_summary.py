"""GPU samples of one benchmark level reduced to the figures a trial is judged by.

Energy is what makes settings comparable beyond speed: the GPUs' energy over the
level divided by the output tokens it produced gives joules per output token.
Per GPU, the average power over the samples' span comes from the energy counter
(its delta over the span) when the GPU has one, else from integrating the power
readings (trapezoids); that power times the level's ``duration_s`` is the GPU's
energy. Scaling the span's average to the duration, rather than taking the raw
delta, keeps a 10 s level sampled at 1 Hz from losing the up to 2 s outside its
first and last sample.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tuner.telemetry.gpu import GpuSample


@dataclass(frozen=True)
class GpuStats:
    """One GPU over a level; None where no sample had the figure."""

    index: int
    samples: int
    util_mean_pct: float | None = None
    mem_util_mean_pct: float | None = None
    power_mean_w: float | None = None
    power_max_w: float | None = None
    temperature_max_c: float | None = None
    memory_max_mib: float | None = None
    sm_clock_mean_mhz: float | None = None
    mem_clock_mean_mhz: float | None = None
    pcie_tx_mean_kbps: float | None = None
    pcie_rx_mean_kbps: float | None = None
    energy_j: float | None = None
    energy_source: str | None = None  # "counter" or "power"
    throttle_reasons: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class GpuSummary:
    """All sampled GPUs over a level. Built from no samples, every figure is None.

    Means over GPUs are means of the per-GPU means (each GPU weighs the same however
    many samples it has); ``power_total_mean_w`` and ``energy_j`` are sums over GPUs,
    the box's draw. ``j_per_token`` is ``energy_j / output_tokens``.
    """

    gpus: int = 0
    samples: int = 0
    util_mean_pct: float | None = None
    power_mean_w: float | None = None
    power_total_mean_w: float | None = None
    power_max_w: float | None = None
    temperature_max_c: float | None = None
    memory_max_mib: float | None = None
    sm_clock_mean_mhz: float | None = None
    pcie_tx_mean_kbps: float | None = None
    pcie_rx_mean_kbps: float | None = None
    energy_j: float | None = None
    energy_source: str | None = None  # "counter", "power" or "mixed"
    j_per_token: float | None = None
    throttled: bool | None = None
    throttle_reasons: frozenset[str] = field(default_factory=frozenset)
    per_gpu: tuple[GpuStats, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (reason sets become sorted lists)."""
        data = asdict(self)
        data["throttle_reasons"] = sorted(self.throttle_reasons)
        for gpu in data["per_gpu"]:
            gpu["throttle_reasons"] = sorted(gpu["throttle_reasons"])
        return data


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _values(samples: Iterable[GpuSample], name: str) -> list[float]:
    return [v for s in samples if (v := getattr(s, name)) is not None]


def average_power_w(samples: Sequence[GpuSample]) -> tuple[float | None, str | None]:
    """One GPU's average power over its samples' span, and where it came from.

    The energy counter's delta when two readings of it span some time and it did not go
    backwards (a driver reload resets it); else the time-weighted mean of the power
    readings; a single power reading stands for itself.
    """
    ordered = sorted(samples, key=lambda s: s.time_s)
    counted = [s for s in ordered if s.energy_mj is not None]
    if len(counted) >= 2:
        first, last = counted[0], counted[-1]
        span = last.time_s - first.time_s
        delta_mj = last.energy_mj - first.energy_mj  # type: ignore[operator]
        if span > 0 and delta_mj >= 0:
            return delta_mj / 1000.0 / span, "counter"
    powered = [s for s in ordered if s.power_w is not None]
    if len(powered) >= 2 and powered[-1].time_s > powered[0].time_s:
        area = 0.0
        for a, b in zip(powered, powered[1:], strict=False):
            area += (a.power_w + b.power_w) / 2.0 * (b.time_s - a.time_s)  # type: ignore[operator]
        return area / (powered[-1].time_s - powered[0].time_s), "power"
    if powered:
        return _mean([s.power_w for s in powered]), "power"  # type: ignore[misc]
    return None, None


def _gpu_stats(index: int, samples: list[GpuSample], duration_s: float) -> GpuStats:
    power = _values(samples, "power_w")
    avg_w, source = average_power_w(samples)
    energy = avg_w * duration_s if avg_w is not None and duration_s > 0 else None
    reasons = frozenset(r for s in samples for r in s.throttle_reasons)
    return GpuStats(
        index=index,
        samples=len(samples),
        util_mean_pct=_mean(_values(samples, "util_pct")),
        mem_util_mean_pct=_mean(_values(samples, "mem_util_pct")),
        power_mean_w=_mean(power),
        power_max_w=max(power, default=None),
        temperature_max_c=max(_values(samples, "temperature_c"), default=None),
        memory_max_mib=max(_values(samples, "memory_used_mib"), default=None),
        sm_clock_mean_mhz=_mean(_values(samples, "sm_clock_mhz")),
        mem_clock_mean_mhz=_mean(_values(samples, "mem_clock_mhz")),
        pcie_tx_mean_kbps=_mean(_values(samples, "pcie_tx_kbps")),
        pcie_rx_mean_kbps=_mean(_values(samples, "pcie_rx_kbps")),
        energy_j=energy,
        energy_source=source if energy is not None else None,
        throttle_reasons=reasons,
    )


def summarize_gpu(
    samples: Sequence[GpuSample], *, output_tokens: int, duration_s: float
) -> GpuSummary:
    """Reduce one level's GPU samples (see the module docstring for the energy rule).

    ``output_tokens`` and ``duration_s`` are the level's, from the benchmark. Energy and
    J/token are None when ``duration_s <= 0``, ``output_tokens <= 0`` or no GPU reports
    power or energy.
    """
    if not samples:
        return GpuSummary()
    by_gpu: dict[int, list[GpuSample]] = defaultdict(list)
    for s in samples:
        by_gpu[s.index].append(s)
    stats = tuple(_gpu_stats(i, by_gpu[i], duration_s) for i in sorted(by_gpu))

    def pick(name: str) -> list[float]:
        return [v for g in stats if (v := getattr(g, name)) is not None]

    power_means = pick("power_mean_w")
    energies = pick("energy_j")
    energy = sum(energies) if energies else None
    sources = {g.energy_source for g in stats if g.energy_source is not None}
    reasons = frozenset().union(*(g.throttle_reasons for g in stats))
    return GpuSummary(
        gpus=len(stats),
        samples=len(samples),
        util_mean_pct=_mean(pick("util_mean_pct")),
        power_mean_w=_mean(power_means),
        power_total_mean_w=sum(power_means) if power_means else None,
        power_max_w=max(pick("power_max_w"), default=None),
        temperature_max_c=max(pick("temperature_max_c"), default=None),
        memory_max_mib=max(pick("memory_max_mib"), default=None),
        sm_clock_mean_mhz=_mean(pick("sm_clock_mean_mhz")),
        pcie_tx_mean_kbps=_mean(pick("pcie_tx_mean_kbps")),
        pcie_rx_mean_kbps=_mean(pick("pcie_rx_mean_kbps")),
        energy_j=energy,
        energy_source=(sources.pop() if len(sources) == 1 else "mixed") if sources else None,
        j_per_token=energy / output_tokens if energy is not None and output_tokens > 0 else None,
        throttled=bool(reasons),
        throttle_reasons=reasons,
        per_gpu=stats,
    )
