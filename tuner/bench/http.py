"""The streaming transport: a minimal HTTP/1.1 client on asyncio's Protocol API, and its pool.

Reads are stamped by ``Pool.clock`` (see tuner/bench/clock.py: the instant the loop's
poll returned, in the engine's own loops).

Why not aiohttp or httpx on this path: with them every network read wakes a coroutine
(a future, a task step, an ``async for``), which is most of the client's cost per token.
A Protocol's ``data_received`` is called straight from the event loop with the bytes, so
one token costs one callback: timestamp, de-chunk, split events, classify. On a small
core that is about twice as cheap as a plain aiohttp loop; benchmarks/client_capacity.py
measures all three. httpx keeps the paths where speed does not matter (``/v1/models``).

Scope, on purpose: one request at a time per connection (keep-alive, no pipelining),
``Content-Length`` request bodies, chunked / length / until-close response bodies, plain
TCP or TLS. Every failure ends the exchange with a reason; none raises into the caller.

This module holds where requests go (``Target``) and the connections (``Pool``); one
connection's request and response parsing is ``StreamProtocol`` in tuner/bench/http_protocol.py.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from tuner.bench.clock import arrival_clock
from tuner.bench.http_protocol import Exchange, StreamProtocol
from tuner.errors import BenchmarkError
from tuner.server_http import auth_headers, host_header, tls_context, url_host

__all__ = ["CONNECT_TIMEOUT_S", "Exchange", "Pool", "StreamProtocol", "Target"]

CONNECT_TIMEOUT_S = 10.0
_perf = time.perf_counter


@dataclass(frozen=True)
class Target:
    """Where requests go: host, port, TLS, and any path prefix before ``/v1``."""

    host: str
    port: int
    tls: bool
    prefix: str

    @classmethod
    def from_url(cls, base_url: str) -> Target:
        parts = urlsplit(base_url if "://" in base_url else f"http://{base_url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BenchmarkError(f"cannot use {base_url!r} as a server URL: write http://HOST:PORT")
        tls = parts.scheme == "https"
        prefix = parts.path.rstrip("/")
        # Accept both http://host:8000 and http://host:8000/v1.
        prefix = prefix.removesuffix("/v1")
        return cls(parts.hostname, parts.port or (443 if tls else 80), tls, prefix)

    @property
    def authority(self) -> str:
        """``host:port`` as the ``Host`` header writes it (``[::1]:8000`` for IPv6)."""
        return host_header(self.host, self.port)

    def url(self, path: str) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{url_host(self.host)}:{self.port}{self.prefix}{path}"

    def post(self, path: str, body: bytes) -> bytes:
        """The bytes of one streaming POST: built once, before the clock runs."""
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.authority}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n"
        )
        # The same key every other request to the server carries (tuner/server_http.py).
        for name, value in auth_headers().items():
            head += f"{name}: {value}\r\n"
        return head.encode("latin-1") + b"\r\n" + body


class Pool:
    """Keep-alive connections to one target, opened ahead of the measured window."""

    def __init__(self, target: Target, clock: Callable[[], float] | None = None) -> None:
        self.target = target
        self.clock = clock or arrival_clock()
        self.idle: list[StreamProtocol] = []
        self._all: set[StreamProtocol] = set()
        self._ssl: ssl.SSLContext | None = tls_context() if target.tls else None

    async def open(self, count: int) -> None:
        """Open connections until ``count`` are idle; raise BenchmarkError if none open."""
        errors: list[BaseException] = []
        for _ in range(2):  # a burst of connects may overflow a listen backlog: retry once
            missing = count - len(self.idle)
            if missing <= 0:
                return
            results = await asyncio.gather(
                *(self._connect() for _ in range(missing)), return_exceptions=True
            )
            errors = [r for r in results if isinstance(r, BaseException)]
            self.idle.extend(r for r in results if isinstance(r, StreamProtocol))
            if not self.idle:
                break
        if errors and not self.idle:
            raise BenchmarkError(
                f"cannot connect to {self.target.authority}: {errors[0]}"
            ) from errors[0]

    async def _connect(self) -> StreamProtocol:
        loop = asyncio.get_running_loop()
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: StreamProtocol(self),
                    self.target.host,
                    self.target.port,
                    ssl=self._ssl,
                    server_hostname=self.target.host if self._ssl else None,
                ),
                CONNECT_TIMEOUT_S,
            )
        except asyncio.TimeoutError:
            raise OSError(f"no connection within {CONNECT_TIMEOUT_S:g} s") from None
        self._all.add(protocol)
        return protocol

    def chunks_in_flight(self) -> int:
        """Token-bearing chunks received so far by the responses still streaming."""
        return sum(c.exchange.chunks for c in self._all if c.exchange is not None)

    def release(self, conn: StreamProtocol) -> None:
        self.idle.append(conn)

    def forget(self, conn: StreamProtocol) -> None:
        self._all.discard(conn)

    async def _take(self) -> StreamProtocol:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                return conn
        return await self._connect()

    async def exchange(self, request: bytes, timeout_s: float) -> Exchange:
        """Send one request and wait for its whole response; never raises for I/O.

        ``t_send``, where TTFT and E2EL start, is stamped before a connection is taken.
        """
        loop = asyncio.get_running_loop()
        # The clock starts as vllm bench serve's does, before ``session.post``: taking a
        # connection (a connect, when none is idle) and writing the request are in TTFT
        # and E2EL. A resend on a new connection keeps the first start.
        t_send = _perf()
        for attempt in (0, 1):
            ex = Exchange(loop.create_future())
            ex.t_send = t_send
            try:
                conn = await self._take()
            except OSError as exc:
                ex.error = f"connection failed: {exc}"
                return ex
            ex.timer = loop.call_later(timeout_s, conn.timeout, timeout_s)
            conn.send(request, ex)
            try:
                await ex.future
            except asyncio.CancelledError:
                conn._close()  # cancelled mid-response: the connection is unusable
                raise
            finally:
                if ex.timer is not None:
                    ex.timer.cancel()
            if not (ex.retryable and attempt == 0):
                return ex
        return ex

    def close(self) -> None:
        for conn in list(self._all) + self.idle:
            conn._close()
        self.idle.clear()
