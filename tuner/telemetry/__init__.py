"""Telemetry around a benchmark: GPU (NVML) and host (psutil) samplers, the server's
/metrics, and the study's inventory; each degrades to nothing without a GPU or server.

Names are imported lazily so that ``tuner.telemetry.gpu_sampler`` and friends load
with only the standard library, psutil and nvidia-ml-py (benchmarks/nvml_check.py
runs that way on GPU machines without tuner's other dependencies).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuner.telemetry.gpu_sampler import GpuSampler
    from tuner.telemetry.gpu_summary import GpuStats, GpuSummary, summarize_gpu
    from tuner.telemetry.host import HostSample, HostSampler, HostSummary, summarize_host
    from tuner.telemetry.inventory import (
        Inventory,
        collect_inventory,
        inventory_lines,
        parse_nccl_version,
        render_inventory,
        render_inventory_dict,
    )
    from tuner.telemetry.prom import (
        MetricsDelta,
        MetricsReading,
        MetricsSampler,
        ScrapeFailures,
        metrics_delta,
        parse_metrics,
        scrape_metrics,
        scrape_metrics_async,
    )
    from tuner.telemetry.sampler import PeriodicSampler

_EXPORTS = {
    "GpuSampler": "gpu_sampler",
    "HostSample": "host",
    "HostSampler": "host",
    "HostSummary": "host",
    "summarize_host": "host",
    "Inventory": "inventory",
    "collect_inventory": "inventory",
    "inventory_lines": "inventory",
    "parse_nccl_version": "inventory",
    "render_inventory": "inventory",
    "render_inventory_dict": "inventory",
    "MetricsDelta": "prom",
    "MetricsReading": "prom",
    "MetricsSampler": "prom",
    "ScrapeFailures": "prom",
    "metrics_delta": "prom",
    "parse_metrics": "prom",
    "scrape_metrics": "prom",
    "scrape_metrics_async": "prom",
    "PeriodicSampler": "sampler",
    "GpuStats": "gpu_summary",
    "GpuSummary": "gpu_summary",
    "summarize_gpu": "gpu_summary",
}

__all__ = [
    "GpuSampler",
    "GpuStats",
    "GpuSummary",
    "HostSample",
    "HostSampler",
    "HostSummary",
    "Inventory",
    "MetricsDelta",
    "MetricsReading",
    "MetricsSampler",
    "ScrapeFailures",
    "PeriodicSampler",
    "collect_inventory",
    "inventory_lines",
    "metrics_delta",
    "parse_metrics",
    "parse_nccl_version",
    "render_inventory",
    "render_inventory_dict",
    "scrape_metrics",
    "scrape_metrics_async",
    "summarize_gpu",
    "summarize_host",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return __all__
