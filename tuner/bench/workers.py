"""Several client processes for one level, when one core cannot keep up with the server.

The parent runs the warmup, then starts ``N`` workers (``python -m tuner.bench.workers``,
each talking to the parent over a socket pair, so that no caller needs an
``if __name__ == "__main__"`` guard as multiprocessing's spawn would). Each builds its
requests, opens its share of connections and says "ready"; the parent then sends one
start instant on the shared monotonic clock (``perf_counter`` is system-wide on Linux
and macOS), so every worker's records are on one time axis. Workers report progress
every quarter second and send their window at the end. A worker that fails fails the
level with its reason; none outlives the call (a worker also exits when its parent's
end of the socket closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

from tuner.bench import clock
from tuner.bench.http import Pool, Target
from tuner.bench.level import LiveStats, Window, make_builder, prepare, run_window, warm_up
from tuner.bench.load import LoadSpec, Share, split
from tuner.errors import BenchmarkError

_READY_TIMEOUT_S = 120.0
_START_MARGIN_S = 0.05
_PROGRESS_EVERY_S = 0.25


class _Worker:
    """One worker process and the parent's end of its socket pair."""

    def __init__(self, index: int) -> None:
        parent, child = socket.socketpair()
        env = dict(os.environ)
        # The child must import the same tuner as this process, wherever it came from.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tuner.bench.workers", str(child.fileno())],
            pass_fds=(child.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        child.close()
        self.conn = Connection(parent.detach())

    def receive(self) -> tuple[str, Any]:
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(2)
            return "error", f"exited with code {self.proc.returncode} and no word"

    def stop(self) -> None:
        self.conn.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def run_workers(
    target: Target, load: LoadSpec, workers: int, *, round_index: int, live: LiveStats
) -> list[Window]:
    """Measure one level with ``workers`` processes; return each one's window."""
    clock.run(_warmup_only(target, load, live))
    shares = split(load, workers)
    started: list[_Worker] = []
    try:
        for share in shares:
            worker = _Worker(share.worker)
            started.append(worker)
            worker.conn.send((target, load, share, round_index))
        live.phase = "connecting"
        _await_ready(started)
        t0 = time.perf_counter() + _START_MARGIN_S
        for worker in started:
            worker.conn.send(("go", t0))
        live.phase = "measuring"
        live.window_start = t0
        return _collect(started, live)
    finally:
        for worker in started:
            worker.stop()


async def _warmup_only(target: Target, load: LoadSpec, live: LiveStats) -> None:
    pool = Pool(target)
    try:
        await warm_up(pool, make_builder(load), load, live)
    finally:
        pool.close()


def _await_ready(workers: list[_Worker]) -> None:
    waiting = {w.conn: w for w in workers}
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchmarkError(f"{len(waiting)} bench workers did not get ready in time")
        for conn in wait(list(waiting), timeout=min(left, 1.0)):
            worker = waiting.pop(conn)  # type: ignore[call-overload]
            kind, payload = worker.receive()
            if kind != "ready":
                raise BenchmarkError(
                    f"bench worker {worker.index} failed while connecting: {payload}"
                )


def _collect(workers: list[_Worker], live: LiveStats) -> list[Window]:
    windows: dict[int, Window] = {}
    progress: dict[int, LiveStats] = {}
    running = {w.conn: w for w in workers}
    while running:
        for conn in wait(list(running), timeout=1.0):
            worker = running[conn]  # type: ignore[index]
            kind, payload = worker.receive()
            if kind == "progress":
                progress[worker.index] = payload
            elif kind == "done":
                windows[worker.index] = payload
                progress[worker.index] = payload.live
                del running[conn]  # type: ignore[arg-type]
            else:
                raise BenchmarkError(f"bench worker {worker.index} failed: {payload}")
        total = LiveStats()
        for stats in progress.values():
            total.add(stats)
        for name in (
            "sent",
            "completed",
            "errors",
            "in_flight",
            "chunks",
            "chunks_done",
            "output_tokens",
            "lag_max_s",
            "last_error",
        ):
            setattr(live, name, getattr(total, name))
    return [windows[w.index] for w in workers]


# The worker side -----------------------------------------------------------------------


def _worker_main(fd: int) -> None:
    conn = Connection(fd)
    try:
        target, load, share, round_index = conn.recv()
        window = clock.run(_worker(conn, target, load, share, round_index))
        conn.send(("done", window))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the parent is gone: nothing to report to
    except BaseException:  # report every failure to the parent, then exit
        last = traceback.format_exc(limit=3).strip().splitlines()[-1]
        with contextlib.suppress(OSError):
            conn.send(("error", last))
    finally:
        conn.close()


async def _worker(
    conn: Connection, target: Target, load: LoadSpec, share: Share, round_index: int
) -> Window:
    if load.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {load.cpus[share.worker % len(load.cpus)]})
    live = LiveStats()
    pool = Pool(target)
    builder = make_builder(load)
    try:
        prepared = prepare(builder, target, share)
        await pool.open(share.concurrency)
        conn.send(("ready", None))
        _, t0 = conn.recv()  # blocks this loop: nothing runs yet, connections idle
        reporter = asyncio.ensure_future(_report(conn, live))
        try:
            return await run_window(
                pool,
                builder,
                load,
                share,
                round_index=round_index,
                t0=t0,
                live=live,
                prepared=prepared,
            )
        finally:
            reporter.cancel()
    finally:
        pool.close()


async def _report(conn: Connection, live: LiveStats) -> None:
    while True:
        await asyncio.sleep(_PROGRESS_EVERY_S)
        conn.send(("progress", live))


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]))
