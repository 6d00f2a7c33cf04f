"""The client watching itself while it measures: how late its event loop runs, how busy
its process is, how often the OS preempts it.

A client that falls behind stamps tokens late and reports the delay as the server's, so
every window says what its own lag was (``ClientLag``), and sends are spread over the
event loop's passes so reads are not held up behind them.
"""

from __future__ import annotations

import asyncio
import resource
import time

from tuner.bench.http import Pool
from tuner.bench.live import LiveStats
from tuner.bench.records import ClientLag

_perf = time.perf_counter
_LAG_INTERVAL_S = 0.005
_SEND_BUDGET_S = 0.001


class SendGate:
    """Sends take at most ``budget_s`` of one event-loop pass, so reads are not held up.

    A level that starts all its streams at once would otherwise send every request in
    one pass of the loop (256 sends take several milliseconds on a small core) while
    the first answers already wait, unread and unstamped, in the kernel.
    """

    def __init__(self, budget_s: float = _SEND_BUDGET_S) -> None:
        self.budget_s = budget_s
        self.pass_start: float | None = None

    async def turn(self) -> None:
        while self.pass_start is not None and _perf() - self.pass_start > self.budget_s:
            await asyncio.sleep(0)  # resume in the next pass, after the loop polled
        if self.pass_start is None:
            self.pass_start = _perf()
            asyncio.get_running_loop().call_soon(self._new_pass)

    def _new_pass(self) -> None:
        self.pass_start = None


class LagProbe:
    """Sleeps a few milliseconds at a time and records how late each wake-up comes."""

    def __init__(self, pool: Pool, live: LiveStats, interval_s: float = _LAG_INTERVAL_S) -> None:
        self.pool = pool
        self.live = live
        self.interval_s = interval_s
        self.samples: list[float] = []
        self.stop = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        interval = self.interval_s
        live = self.live
        wakes = 0
        while not self.stop:
            before = loop.time()
            await asyncio.sleep(interval)
            lag = loop.time() - before - interval
            self.samples.append(lag)
            if lag > live.lag_max_s:
                live.lag_max_s = lag
            wakes += 1
            if wakes % 50 == 0:  # a quarter second: cheap enough to count streaming chunks
                live.chunks = live.chunks_done + self.pool.chunks_in_flight()


def involuntary_switches() -> int:
    """How often the OS took the CPU from this process to run another one."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def summarize_lag(
    samples: list[float], busy: float, cpu_s: float = 0.0, preempted: int = 0
) -> ClientLag:
    if not samples:
        return ClientLag(busy=busy, cpu_s=cpu_s, preempted=preempted)
    ordered = sorted(max(0.0, s) for s in samples)
    n = len(ordered)
    return ClientLag(
        max_s=ordered[-1],
        p99_s=ordered[min(n - 1, int(0.99 * n))],
        p50_s=ordered[n // 2],
        samples=n,
        busy=busy,
        cpu_s=cpu_s,
        preempted=preempted,
    )
