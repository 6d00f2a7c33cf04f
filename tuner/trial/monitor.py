"""Everything watched around one launch's benchmark: GPUs, host, and the server's /metrics.

``LaunchMonitor`` starts the samplers once per launch; ``level()`` brackets one
benchmark level and returns what happened during it (GPU summary with J/token,
host summary, /metrics deltas with peaks and a preemption flag); ``stop()``
returns every raw sample for the store. Without a GPU only the host and server
sides run. Every /metrics scrape of the launch reports its failures to one
``ScrapeFailures``: ``scrape_notice()`` is one line for the user per launch.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuner import telemetry
from tuner.telemetry.gpu import GpuBackend, GpuSample
from tuner.telemetry.host import HostSample
from tuner.telemetry.sampler import PeriodicSampler


@dataclass(frozen=True)
class LevelTelemetry:
    """What the monitors saw during one level."""

    server_metrics: dict[str, Any]
    gpu: dict[str, Any] | None
    host: dict[str, Any]
    warning: str | None


class LevelWindow:
    """Returned by ``LaunchMonitor.level()``: call ``finish(tokens, seconds)`` after the level."""

    def __init__(self, monitor: LaunchMonitor) -> None:
        self._monitor = monitor
        self._before = telemetry.scrape_metrics(monitor.base_url, failures=monitor.scrape_failures)
        self._start = time.time()

    def finish(self, *, output_tokens: int, duration_s: float) -> LevelTelemetry:
        m = self._monitor
        end = time.time()
        after = telemetry.scrape_metrics(m.base_url, failures=m.scrape_failures)
        during = [r.values for r in m.metrics.window(self._start, end)]
        delta = telemetry.metrics_delta(self._before, after, during=during)
        gpu = None
        if m.gpu_sampler is not None:
            gpu = telemetry.summarize_gpu(
                m.gpu_sampler.window(self._start, end),
                output_tokens=output_tokens,
                duration_s=duration_s,
            ).to_dict()
        host = telemetry.summarize_host(m.host.window(self._start, end)).to_dict()
        return LevelTelemetry(
            server_metrics=delta.to_dict(), gpu=gpu, host=host, warning=delta.warning
        )


class LaunchMonitor:
    """The samplers of one launch; use as a context manager or call start/stop."""

    def __init__(
        self, gpu: GpuBackend, *, server_pid: int, base_url: str, interval_s: float = 1.0
    ) -> None:
        self.base_url = base_url
        self.scrape_failures = telemetry.ScrapeFailures()
        self.gpu_sampler = (
            telemetry.GpuSampler(gpu, list(range(gpu.device_count())), interval_s=interval_s)
            if gpu.available
            else None
        )
        self.host = telemetry.HostSampler(server_pid, interval_s=interval_s)
        # /metrics during a level: the KV-cache and queue gauges peak mid-level, and a
        # scrape after it only sees an idle server. Slower than the GPU sampler: each
        # scrape costs the server's API process a few milliseconds.
        self.metrics = telemetry.MetricsSampler(
            base_url, interval_s=max(2.0, interval_s), failures=self.scrape_failures
        )
        self._samples: list[dict[str, Any]] | None = None

    def start(self) -> LaunchMonitor:
        for sampler in self._samplers():
            sampler.start()
        return self

    def level(self) -> LevelWindow:
        return LevelWindow(self)

    def stop(self) -> list[dict[str, Any]]:
        """Stop every sampler; the raw GPU and host samples as rows for the store."""
        if self._samples is None:
            gpu = self.gpu_sampler.stop() if self.gpu_sampler else []
            host = self.host.stop()
            self.metrics.stop()
            self._samples = sample_rows(gpu, host)
        return self._samples

    def scrape_notice(self) -> str | None:
        """What went wrong with this launch's /metrics scrapes, in one line; None if nothing."""
        return self.scrape_failures.notice()

    def __enter__(self) -> LaunchMonitor:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _samplers(self) -> list[PeriodicSampler[Any]]:
        found: list[PeriodicSampler[Any]] = [self.host, self.metrics]
        if self.gpu_sampler is not None:
            found.append(self.gpu_sampler)
        return found


def sample_rows(
    gpu_samples: Sequence[GpuSample], host_samples: Sequence[HostSample]
) -> list[dict[str, Any]]:
    """Raw samples as rows of ``tuner_samples``."""
    rows = [
        dict(kind="gpu", time_s=s.time_s, gpu_index=s.index, data=plain_dict(s))
        for s in gpu_samples
    ]
    rows += [
        dict(kind="host", time_s=s.time_s, gpu_index=None, data=plain_dict(s)) for s in host_samples
    ]
    return rows


def plain_dict(obj: Any) -> dict[str, Any]:
    """A dataclass as JSON-ready data (tuples become lists), for the store."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(obj).items()}
