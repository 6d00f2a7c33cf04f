"""When did bytes arrive? The instant the event loop's poll returned, not when a callback ran.

When many streams receive at once (every first token of a level that starts all its
streams together), the loop handles the ready sockets one after the other; stamping each
read when its callback runs would make the last one look late by the whole batch (on a
small core, 256 sockets take several milliseconds). Every byte handled in one loop
iteration was already in the kernel when the poll returned, so that instant is the
better stamp. The engine runs its levels on a ``SelectorEventLoop`` whose selector
records it (public asyncio and selectors API); in any other loop, reads are stamped
with ``perf_counter`` as they are handled.
"""

from __future__ import annotations

import asyncio
import selectors
import time
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

_perf = time.perf_counter
_T = TypeVar("_T")
_clocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Callable[[], float]] = (
    weakref.WeakKeyDictionary()
)


class StampingSelector(selectors.DefaultSelector):
    """The platform's default selector, remembering when its last poll returned."""

    def __init__(self) -> None:
        super().__init__()
        self.stamp = _perf()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(timeout)
        self.stamp = _perf()
        return ready

    def now(self) -> float:
        return self.stamp


def new_loop() -> asyncio.AbstractEventLoop:
    """A selector event loop whose reads are stamped at poll time."""
    selector = StampingSelector()
    loop = asyncio.SelectorEventLoop(selector)
    _clocks[loop] = selector.now
    return loop


def arrival_clock() -> Callable[[], float]:
    """The stamp for bytes handled now: poll time in our loops, else ``perf_counter``."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _perf
    return _clocks.get(loop, _perf)


def run(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run`` on a stamping loop (``asyncio.Runner`` needs Python 3.11)."""
    loop = new_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
