"""The entry points: find the model, measure one level (sync or async), judge the client.

``measure_level`` is what the sweep and ``tuner bench`` call. It runs its own event loop
(the sweep is synchronous), in one process or in several (``LoadSpec.workers``), and
returns the raw records with a verdict on the client itself: a level during which the
client's event loop ran late is marked ``client_limited`` with a warning that says what
to do, instead of passing a wrong number on as the server's.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator, Sequence

import httpx

from tuner.bench import clock
from tuner.bench.http import Target
from tuner.bench.level import LiveStats, Window, measure_in_process, summarize_lag
from tuner.bench.load import LoadSpec, split
from tuner.bench.records import ClientLag, LevelResult
from tuner.errors import BenchmarkError
from tuner.server_http import API_KEY_ENV, server_client

LAG_LIMIT_S = 0.010
"""A p99 event-loop lag above this means token timestamps may be late by as much."""
BUSY_LIMIT = 0.90
"""A client process busier than this (CPU over wall time) is about to fall behind."""


def discover_model(base_url: str, *, timeout_s: float = 10.0) -> str:
    """The first model id the server lists at ``GET /v1/models``.

    Sent as the benchmark's requests are: with ``OPENAI_API_KEY``, never through a proxy.
    """
    url = Target.from_url(base_url).url("/v1/models")
    try:
        with server_client(timeout=timeout_s) as client:
            response = client.get(url)
    except httpx.HTTPError as exc:
        raise BenchmarkError(
            f"cannot reach {url}: {exc or type(exc).__name__}; is the server running there?"
        ) from exc
    if response.status_code != 200:
        hint = ""
        if response.status_code in (401, 403):
            hint = f"; set {API_KEY_ENV} to the key the server was started with (--api-key)"
        raise BenchmarkError(
            f"{url} answered HTTP {response.status_code}: {response.text[:200]}{hint}"
        )
    try:
        models = response.json().get("data") or []
        model = models[0]["id"]
    except (ValueError, AttributeError, LookupError, TypeError):
        raise BenchmarkError(
            f"{url} lists no model; pass the model name explicitly (--model NAME)"
        ) from None
    return str(model)


async def measure_level_async(
    base_url: str,
    load: LoadSpec,
    *,
    round_index: int = 0,
    live: LiveStats | None = None,
) -> LevelResult:
    """Measure one level in the running event loop (one process; ``workers`` is ignored)."""
    target = Target.from_url(base_url)
    _raise_open_files(load.concurrency + 64)
    live = live if live is not None else LiveStats()
    share = split(load, 1)[0]
    window = await measure_in_process(target, load, share, round_index=round_index, live=live)
    return assemble(load, round_index, [window])


def measure_level(
    base_url: str,
    load: LoadSpec,
    *,
    round_index: int = 0,
    live: LiveStats | None = None,
) -> LevelResult:
    """Measure one level: warmup, then the load, on warm connections; runs its own loop.

    With ``load.workers == 0`` (auto) a level that one process could not keep up with
    is measured again with more processes, up to the number of cores.
    """
    live = live if live is not None else LiveStats()
    workers = load.workers or 1
    result = _measure(base_url, load, workers, round_index, live)
    cores = len(load.cpus) if load.cpus else _available_cores()
    # Only a saturated client gains from more processes; a crowded-out one would not.
    while (
        load.workers == 0
        and result.client_limited
        and result.client_lag.busy > BUSY_LIMIT
        and workers < min(cores, load.concurrency)
    ):
        before = result
        workers = min(cores, load.concurrency, workers * 2)
        result = _measure(base_url, load, workers, round_index, live)
        note = (
            f"measured again with {workers} client processes: one process was "
            f"client-limited (event-loop lag p99 {before.client_lag.p99_s * 1000:.1f} ms)"
        )
        result = _with_warnings(result, (note,))
    return result


def _measure(
    base_url: str, load: LoadSpec, workers: int, round_index: int, live: LiveStats
) -> LevelResult:
    target = Target.from_url(base_url)
    _raise_open_files(load.concurrency + 64)
    live.reset()
    if workers <= 1:
        with pinned(load.cpus[:1] if load.cpus else None):
            window = clock.run(
                measure_in_process(
                    target, load, split(load, 1)[0], round_index=round_index, live=live
                )
            )
        return assemble(load, round_index, [window])
    from tuner.bench.workers import run_workers  # spawns processes: only when asked

    windows = run_workers(target, load, workers, round_index=round_index, live=live)
    live.phase = "done"
    return assemble(load, round_index, windows)


def assemble(load: LoadSpec, round_index: int, windows: Sequence[Window]) -> LevelResult:
    """One LevelResult from each process's window, with the client's self-check."""
    t0 = min(w.t0 for w in windows)
    records = sorted((r for w in windows for r in w.records), key=lambda r: (r.start_s, r.index))
    t_end = max(w.t_end for w in windows)
    samples = [s for w in windows for s in w.lag_samples]
    lag = summarize_lag(
        samples,
        max(w.busy for w in windows),
        sum(w.cpu_s for w in windows),
        sum(w.preempted for w in windows),
    )
    warnings = []
    limited = lag.p99_s > LAG_LIMIT_S or lag.busy > BUSY_LIMIT
    if limited:
        warnings.append(client_warning(lag, len(windows)))
    return LevelResult(
        records=tuple(records),
        duration_s=max(0.0, t_end - t0),
        concurrency=load.concurrency,
        round=round_index,
        rate=load.rate,
        client_lag=lag,
        client_limited=limited,
        warnings=tuple(warnings),
        peak_in_flight=sum(w.peak_in_flight for w in windows),
        workers=len(windows),
        model=load.model,
    )


def client_warning(lag: ClientLag, workers: int) -> str:
    """What went wrong with the client, and what to do about it."""
    late = (
        f"the client's event loop ran up to {lag.max_s * 1000:.1f} ms late "
        f"(p99 {lag.p99_s * 1000:.1f} ms), so latencies may read high and throughput low"
    )
    if lag.busy > BUSY_LIMIT:
        return (
            f"{late}: a client process was {lag.busy:.0%} busy and could not keep up; "
            f"use more client processes (--workers {max(2, workers * 2)}) or fewer streams"
        )
    return (
        f"{late}, though no client process was more than {lag.busy:.0%} busy: other "
        f"processes took its CPU ({lag.preempted} preemptions); give the client a free "
        "core (benchmark.cpus) or stop the competing load, then measure again"
    )


def _with_warnings(result: LevelResult, extra: tuple[str, ...]) -> LevelResult:
    from dataclasses import replace

    return replace(result, warnings=result.warnings + extra)


def _available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextlib.contextmanager
def pinned(cpus: Sequence[int] | None) -> Iterator[None]:
    """Run the block on ``cpus`` only (Linux), then give the process its cores back."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, set(cpus))
    except OSError as exc:
        raise BenchmarkError(f"cannot pin the client to cores {list(cpus)}: {exc}") from exc
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _raise_open_files(needed: int) -> None:
    """Each stream is a socket; lift the soft open-files limit as far as the hard one allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, target), hard))
