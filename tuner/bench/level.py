"""One level in one process: warm up, open connections, apply the load shape, record requests.

The measured window starts only once every connection it needs is open and idle, so
neither connection setup nor warmup lands in a request's TTFT. A probe coroutine
measures how late the event loop runs meanwhile (tuner/bench/client_lag.py, ``ClientLag``);
the garbage collector is paused during the window so that its pauses do not become token
gaps. The level's progress for the live views is a ``LiveStats`` (tuner/bench/live.py).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
import time
from dataclasses import dataclass, field

from tuner.bench.client_lag import LagProbe, SendGate, involuntary_switches, summarize_lag
from tuner.bench.http import Exchange, Pool, Target
from tuner.bench.live import LiveStats
from tuner.bench.load import LoadSpec, Share
from tuner.bench.prompts import BodyBuilder, load_prompts
from tuner.bench.records import RequestRecord
from tuner.errors import BenchmarkError

__all__ = [
    "LiveStats",
    "Window",
    "make_builder",
    "measure_in_process",
    "prepare",
    "run_window",
    "summarize_lag",
    "to_record",
    "warm_up",
]

_perf = time.perf_counter
_WARMUP_INDEX = 1 << 40  # warmup prompts never repeat a measured one, nor an earlier window's


@dataclass
class Window:
    """What one process measured: its records, when its last request ended, its lag."""

    records: list[RequestRecord]
    t0: float
    t_end: float
    lag_samples: list[float]
    busy: float
    cpu_s: float
    peak_in_flight: int
    preempted: int
    live: LiveStats = field(default_factory=LiveStats)


def make_builder(load: LoadSpec) -> BodyBuilder:
    prompts = load_prompts(load.prompts_file) if load.prompts_file else None
    return BodyBuilder(
        api=load.api,
        model=load.model,
        prompt_tokens=load.prompt_tokens,
        max_tokens=load.max_tokens,
        ignore_eos=load.ignore_eos,
        seed=load.seed,
        prompts=prompts,
        extra_body=dict(load.extra_body),
    )


def to_record(
    ex: Exchange,
    *,
    concurrency: int,
    round_index: int,
    index: int,
    t0: float,
    expected_prompt_tokens: int,
) -> RequestRecord:
    """Turn one finished exchange into its immutable record (tokens from usage if sent)."""
    usage = ex.usage or {}
    completion = usage.get("completion_tokens")
    if isinstance(completion, int) and completion >= 0:
        output, estimated = completion, False
        prompt = usage.get("prompt_tokens")
        prompt = prompt if isinstance(prompt, int) else expected_prompt_tokens
        details = usage.get("completion_tokens_details")
        reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
        if not isinstance(reasoning, int):
            # Split the true total in the proportion of the chunks that carried each kind.
            reasoning = round(output * ex.reasoning_chunks / ex.chunks) if ex.chunks else 0
    else:
        # No usage: one token per token-bearing chunk, and say it is an estimate.
        output, estimated = ex.chunks, True
        prompt, reasoning = expected_prompt_tokens, ex.reasoning_chunks
    sent = ex.t_send or _perf()
    has_tokens = ex.chunks > 0
    return RequestRecord(
        concurrency=concurrency,
        round=round_index,
        index=index,
        start_s=sent - t0,
        ttft_s=ex.t_first - ex.t_send if has_tokens else None,
        e2el_s=ex.t_last - ex.t_send if has_tokens and ex.error is None else None,
        itl_s=tuple(ex.itl),
        chunks=ex.chunks,
        prompt_tokens=prompt,
        output_tokens=output,
        reasoning_tokens=min(reasoning, output),
        tokens_estimated=estimated,
        error=ex.error,
    )


async def warm_up(pool: Pool, builder: BodyBuilder, load: LoadSpec, live: LiveStats) -> None:
    """Run the warmup requests (excluded from every figure); fail early if none succeeds."""
    if load.warmup <= 0:
        return
    live.phase = "warmup"
    target = pool.target
    gate = asyncio.Semaphore(load.concurrency)

    async def one(k: int) -> Exchange:
        body, _ = builder.body(_WARMUP_INDEX + load.first_index + k)
        async with gate:
            return await pool.exchange(target.post(builder.path, body), load.timeout_s)

    results = await asyncio.gather(*(one(k) for k in range(load.warmup)))
    if all(ex.error is not None for ex in results):
        raise BenchmarkError(
            f"every warmup request to {target.url(builder.path)} failed; "
            f"the first said: {results[0].error}"
        )


def prepare(builder: BodyBuilder, target: Target, share: Share) -> dict[int, tuple[bytes, int]]:
    """Every request of a counted share, built before the clock runs (bytes, prompt size).

    A duration level has no count, so it builds each request as it sends it: a few tens
    of microseconds, once per request.
    """
    prepared = {}
    if share.requests is not None:
        for k in range(share.requests):
            index = share.index_start + k * share.index_step
            body, expected = builder.body(index)
            prepared[index] = (target.post(builder.path, body), expected)
    return prepared


async def run_window(
    pool: Pool,
    builder: BodyBuilder,
    load: LoadSpec,
    share: Share,
    *,
    round_index: int,
    t0: float | None,
    live: LiveStats,
    prepared: dict[int, tuple[bytes, int]] | None = None,
) -> Window:
    """Open ``share.concurrency`` connections, then measure the share's requests from ``t0``.

    ``prepared`` holds requests built beforehand (see ``prepare``); others are built as
    they are sent.
    """
    live.phase = "connecting"
    prepared = prepared if prepared is not None else {}
    await pool.open(share.concurrency)
    target = pool.target
    indexes = itertools.count(share.index_start, share.index_step)
    records: list[RequestRecord] = []
    in_flight = 0
    peak = 0
    last_done = 0.0  # when the last request ended, failed ones included
    live.concurrency = share.concurrency
    live.planned = share.requests
    if t0 is not None:
        await asyncio.sleep(max(0.0, t0 - _perf()))
    else:
        t0 = _perf()
    deadline = t0 + load.duration_s if load.duration_s is not None else None

    sends = SendGate()

    async def one(index: int) -> None:
        nonlocal in_flight, peak, last_done
        if index in prepared:
            request, expected = prepared.pop(index)
        else:
            body, expected = builder.body(index)
            request = target.post(builder.path, body)
        await sends.turn()
        in_flight += 1
        peak = max(peak, in_flight)
        live.sent += 1
        live.in_flight = in_flight
        ex = await pool.exchange(request, load.timeout_s)
        last_done = max(last_done, _perf())
        in_flight -= 1
        live.in_flight = in_flight
        record = to_record(
            ex,
            concurrency=load.concurrency,
            round_index=round_index,
            index=index,
            t0=t0,
            expected_prompt_tokens=expected,
        )
        records.append(record)
        live.chunks_done += record.chunks
        if record.ok:
            live.completed += 1
            live.output_tokens += record.output_tokens
        else:
            live.errors += 1
            live.last_error = record.error

    budget = share.requests

    def more() -> bool:
        nonlocal budget
        if deadline is not None:
            return _perf() < deadline
        assert budget is not None
        budget -= 1
        return budget >= 0

    async def stream() -> None:
        while more():
            await one(next(indexes))

    async def arrivals() -> None:
        rng = random.Random(f"arrivals-{load.seed}-{round_index}-{share.worker}")
        gate = asyncio.Semaphore(share.concurrency)
        tasks = []
        at = t0
        assert share.rate is not None

        async def gated(index: int) -> None:
            async with gate:
                await one(index)

        while True:
            at += rng.expovariate(share.rate)
            if deadline is not None and at >= deadline:
                break
            if deadline is None and not more():
                break
            delay = at - _perf()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(gated(next(indexes))))
        await asyncio.gather(*tasks)

    probe = LagProbe(pool, live)
    probe_task = asyncio.ensure_future(probe.run())
    live.phase = "measuring"
    live.window_start = t0
    cpu0, wall0, switches0 = time.process_time(), _perf(), involuntary_switches()
    gc_was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        if share.rate is None:
            await asyncio.gather(*(stream() for _ in range(share.concurrency)))
        else:
            await arrivals()
    finally:
        if gc_was_enabled:
            gc.enable()
        gc.unfreeze()
        probe.stop = True
        await probe_task
    wall = _perf() - wall0
    cpu = time.process_time() - cpu0
    busy = cpu / wall if wall > 0 else 0.0
    preempted = involuntary_switches() - switches0
    t_end = max(last_done, t0)
    live.chunks = live.chunks_done
    live.phase = "done"
    return Window(records, t0, t_end, probe.samples, busy, cpu, peak, preempted, live)


async def measure_in_process(
    target: Target,
    load: LoadSpec,
    share: Share,
    *,
    round_index: int,
    live: LiveStats,
) -> Window:
    """Warmup and one window on a fresh pool, in the running event loop."""
    builder = make_builder(load)
    pool = Pool(target)
    try:
        await warm_up(pool, builder, load, live)
        prepared = prepare(builder, target, share)
        return await run_window(
            pool,
            builder,
            load,
            share,
            round_index=round_index,
            t0=None,
            live=live,
            prepared=prepared,
        )
    finally:
        pool.close()
