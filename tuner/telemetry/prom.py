"""The server's own view of a level, from its Prometheus ``/metrics`` endpoint.

vLLM counts what the client cannot see: preemptions (a request evicted from the
KV cache and recomputed), KV cache usage, queued requests, prefix cache hits.
A level with preemptions measured memory pressure rather than the settings under
test, so ``MetricsDelta`` flags it.

``parse_metrics`` keys values by *sample* name, the name as written on the wire
(``vllm:num_preemptions_total``), not the family name prometheus_client's parser
derives (it strips ``_total`` from counters: family ``vllm:num_preemptions``).
By default each name's series are summed over their labels (vLLM with data
parallelism writes one series per engine), except fractions (``*_perc``), which
are averaged; ``by_series=True`` keeps one key per series instead,
``name{label="v",...}`` with labels sorted. Histogram buckets and ``_created``
timestamps are dropped: summed over labels they mean nothing.

A failed scrape (unreachable, not 200, unparsable) reads as None; its reason goes to a
``ScrapeFailures`` when one is given (the launch monitor's: one notice per launch, which
the sweep shows), else to a ``logging`` warning. Requests are made with the client setup
of tuner/server_http.py (no proxy, the API key).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tuner.server_http import async_server_client, server_client
from tuner.telemetry.sampler import PeriodicSampler

log = logging.getLogger(__name__)

# Each figure under its current vLLM name first, then the names older releases used.
PREEMPTIONS = ("vllm:num_preemptions_total", "vllm:num_preemptions")
KV_CACHE_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
PREFIX_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
PREFIX_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
PROMPT_TOKENS = ("vllm:prompt_tokens_total",)
GENERATION_TOKENS = ("vllm:generation_tokens_total",)


def parse_metrics(text: str, *, by_series: bool = False) -> dict[str, float]:
    """Prometheus text exposition -> ``{sample name: value}`` (see the module docstring).

    Raises ``ValueError`` on text the parser rejects.
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name
            if name.endswith(("_bucket", "_created")) or math.isnan(sample.value):
                continue
            if by_series and sample.labels:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                name = f"{name}{{{labels}}}"
            sums[name] = sums.get(name, 0.0) + float(sample.value)
            counts[name] = counts.get(name, 0) + 1
    for name, n in counts.items():
        if n > 1 and name.endswith("_perc"):
            sums[name] /= n
    return sums


class ScrapeFailures:
    """The failed scrapes of one launch: the first reason and a count, for a single notice.

    Thread-safe: the sampler's thread and the benchmark's both add to it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first: str | None = None
        self.count = 0

    def add(self, reason: str) -> None:
        with self._lock:
            self.count += 1
            if self.first is None:
                self.first = reason

    def notice(self) -> str | None:
        """One line for the user, or None when every scrape worked."""
        with self._lock:
            if self.first is None:
                return None
            times = f" ({self.count} failed scrapes)" if self.count > 1 else ""
            return (
                f"{self.first}{times}; the server's own figures (preemptions, KV cache use, "
                "queue) are missing where a scrape failed"
            )


def _metrics_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/metrics"


def _failed(reason: str, failures: ScrapeFailures | None) -> None:
    if failures is not None:
        failures.add(reason)
    else:
        log.warning("%s", reason)


def _parse_response(
    response: httpx.Response, url: str, by_series: bool, failures: ScrapeFailures | None
) -> dict[str, float] | None:
    if response.status_code != 200:
        _failed(f"cannot scrape {url}: it answered HTTP {response.status_code}", failures)
        return None
    try:
        return parse_metrics(response.text, by_series=by_series)
    except ValueError as exc:
        _failed(f"cannot parse {url}: {exc}", failures)
        return None


def _unreachable(url: str, exc: Exception, failures: ScrapeFailures | None) -> None:
    _failed(f"cannot scrape {url}: {type(exc).__name__}: {exc}".rstrip(": "), failures)


def scrape_metrics(
    base_url: str,
    *,
    timeout_s: float = 5,
    by_series: bool = False,
    client: httpx.Client | None = None,
    failures: ScrapeFailures | None = None,
) -> dict[str, float] | None:
    """GET ``{base_url}/metrics`` and parse it; None when unreachable, not 200, or unparsable.

    ``client`` defaults to a ``server_client()`` for this one request.
    """
    url = _metrics_url(base_url)
    try:
        if client is not None:
            response = client.get(url, timeout=timeout_s)
        else:
            with server_client(timeout=timeout_s) as own:
                response = own.get(url)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        _unreachable(url, exc, failures)
        return None
    return _parse_response(response, url, by_series, failures)


async def scrape_metrics_async(
    base_url: str,
    *,
    timeout_s: float = 5,
    by_series: bool = False,
    client: httpx.AsyncClient | None = None,
    failures: ScrapeFailures | None = None,
) -> dict[str, float] | None:
    """``scrape_metrics`` for callers already in an event loop (the benchmark)."""
    url = _metrics_url(base_url)
    try:
        if client is not None:
            response = await client.get(url, timeout=timeout_s)
        else:
            async with async_server_client(timeout=timeout_s) as own:
                response = await own.get(url)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        _unreachable(url, exc, failures)
        return None
    return _parse_response(response, url, by_series, failures)


def lookup(metrics: Mapping[str, float] | None, names: Sequence[str]) -> float | None:
    """The first of ``names`` present, also tried with ``_total`` added or removed."""
    if not metrics:
        return None
    for name in names:
        alt = name[: -len("_total")] if name.endswith("_total") else name + "_total"
        for key in (name, alt):
            if key in metrics:
                return metrics[key]
    return None


@dataclass(frozen=True)
class MetricsDelta:
    """What the server counted during one level.

    Counters (preemptions, tokens, prefix cache) are ``after - before``; None when
    either scrape lacks them, or when a counter went backwards (``counter_reset``: the
    server restarted in between). Gauges (KV cache usage as a 0-1 fraction, running
    and waiting requests) are the maximum over the scrapes taken during the level and
    the one after it: scraped only after, they show the idle server.
    """

    preemptions: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    kv_cache_usage_max: float | None = None
    running_max: float | None = None
    waiting_max: float | None = None
    counter_reset: bool = False

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        if self.prefix_cache_queries and self.prefix_cache_hits is not None:
            return self.prefix_cache_hits / self.prefix_cache_queries
        return None

    @property
    def flag(self) -> bool:
        """True when the level's numbers should not be trusted as a measure of the settings."""
        return bool(self.preemptions) or self.counter_reset

    @property
    def warning(self) -> str | None:
        """One line for the trials table, or None."""
        if self.preemptions:
            n = int(self.preemptions)
            return (
                f"level had {n} preemption{'s' if n != 1 else ''}: "
                "its numbers measure memory pressure, not the settings"
            )
        if self.counter_reset:
            return "server counters went backwards during the level: the server restarted"
        return None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            prefix_cache_hit_rate=self.prefix_cache_hit_rate,
            flag=self.flag,
            warning=self.warning,
        )
        return data


def metrics_delta(
    before: Mapping[str, float] | None,
    after: Mapping[str, float] | None,
    *,
    during: Iterable[Mapping[str, float] | None] = (),
) -> MetricsDelta:
    """Compare the scrapes taken before and after a level (plus any taken during it)."""
    reset = False

    def counter(names: Sequence[str]) -> float | None:
        nonlocal reset
        a, b = lookup(before, names), lookup(after, names)
        if a is None or b is None:
            return None
        if b < a:
            reset = True
            return None
        return b - a

    gauge_sources = [m for m in (*during, after) if m]

    def gauge_max(names: Sequence[str]) -> float | None:
        values = [v for m in gauge_sources if (v := lookup(m, names)) is not None]
        return max(values, default=None)

    preemptions = counter(PREEMPTIONS)
    prompt = counter(PROMPT_TOKENS)
    generation = counter(GENERATION_TOKENS)
    queries = counter(PREFIX_QUERIES)
    hits = counter(PREFIX_HITS)
    return MetricsDelta(
        preemptions=preemptions,
        prompt_tokens=prompt,
        generation_tokens=generation,
        prefix_cache_queries=queries,
        prefix_cache_hits=hits,
        kv_cache_usage_max=gauge_max(KV_CACHE_USAGE),
        running_max=gauge_max(RUNNING),
        waiting_max=gauge_max(WAITING),
        counter_reset=reset,
    )


@dataclass(frozen=True)
class MetricsReading:
    """One scrape of /metrics taken by ``MetricsSampler``."""

    time_s: float
    values: Mapping[str, float]


class MetricsSampler(PeriodicSampler[MetricsReading]):
    """Scrapes /metrics every ``interval_s`` during a level, for the gauges' peaks.

    Pass ``[r.values for r in sampler.window(start, end)]`` as ``during`` to
    ``metrics_delta``. A failed scrape is skipped and goes to ``failures``; without one
    the sampler keeps its own and logs its notice once, at ``stop()``. Each scrape costs
    the server a few milliseconds of its API process, hence the slower default than the
    GPU sampler.
    """

    thread_name = "tuner-metrics-sampler"

    def __init__(
        self,
        base_url: str,
        *,
        interval_s: float = 2.0,
        timeout_s: float = 2.0,
        max_samples: int = 10_000,
        failures: ScrapeFailures | None = None,
    ) -> None:
        super().__init__(interval_s, max_records=max_samples)
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._reports_failures = failures is None
        self.failures = ScrapeFailures() if failures is None else failures
        self._client: httpx.Client | None = None

    def _prime(self) -> None:
        self._client = server_client(timeout=self.timeout_s)

    def _read(self) -> Iterable[MetricsReading]:
        values = scrape_metrics(
            self.base_url, timeout_s=self.timeout_s, client=self._client, failures=self.failures
        )
        return [] if values is None else [MetricsReading(time.time(), values)]

    def stop(self) -> list[MetricsReading]:
        records = super().stop()
        if self._client is not None:  # started, and stopped for the first time
            self._client.close()
            self._client = None
            notice = self.failures.notice()
            if self._reports_failures and notice:
                log.warning("%s", notice)
        return records
