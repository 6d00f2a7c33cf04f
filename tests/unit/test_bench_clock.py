"""Reads are stamped when the loop's poll returned, in the engine's own loops."""

from __future__ import annotations

import asyncio
import socket
import time

from tuner.bench import clock


def test_run_gives_a_stamping_loop_and_cleans_up() -> None:
    seen = {}

    async def main() -> int:
        seen["clock"] = clock.arrival_clock()
        seen["loop"] = asyncio.get_running_loop()
        asyncio.ensure_future(asyncio.sleep(30))  # left running: cancelled at the end
        return 7

    assert clock.run(main()) == 7
    assert seen["clock"] is not time.perf_counter
    assert seen["loop"].is_closed()


def test_other_loops_and_no_loop_use_perf_counter() -> None:
    assert clock.arrival_clock() is time.perf_counter

    async def main() -> object:
        return clock.arrival_clock()

    assert asyncio.run(main()) is time.perf_counter


def test_the_stamp_is_when_the_poll_returned() -> None:
    selector = clock.StampingSelector()
    a, b = socket.socketpair()
    try:
        selector.register(a, 1)  # EVENT_READ
        b.send(b"x")
        before = time.perf_counter()
        ready = selector.select(1.0)
        after = time.perf_counter()
        assert ready and before <= selector.now() <= after
    finally:
        selector.close()
        a.close()
        b.close()
