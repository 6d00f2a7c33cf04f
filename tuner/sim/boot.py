"""The process plumbing of a start: a port bound before it listens, a slow import overlapped.

A real server refuses connections until it is ready, so the socket is bound at once (the
port is taken) but listens only once startup is done; the HTTP server's import (aiohttp,
slow) runs on a thread while the simulated load sleeps, so it costs no wall time.
"""

from __future__ import annotations

import asyncio
import importlib
import socket
import threading
from types import ModuleType
from typing import Any


def import_in_thread(name: str) -> asyncio.Future[ModuleType]:
    """Import a slow module on a daemon thread, overlapping it with the simulated load."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[ModuleType] = loop.create_future()

    def work() -> None:
        try:
            mod = importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop
            loop.call_soon_threadsafe(_settle, fut, None, exc)
        else:
            loop.call_soon_threadsafe(_settle, fut, mod, None)

    threading.Thread(target=work, name=f"import-{name}", daemon=True).start()
    return fut


def _settle(fut: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


def bind_socket(host: str, port: int) -> socket.socket:
    """Bind without listening: connections are refused until the server is ready."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
