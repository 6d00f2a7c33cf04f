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
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from tuner.bench import sse
from tuner.bench.clock import arrival_clock
from tuner.errors import BenchmarkError

_perf = time.perf_counter
_classify = sse.classify
_REASONING = sse.REASONING
_PARSE = sse.PARSE
_DONE = sse.DONE
_TOKEN_KINDS = frozenset((sse.CONTENT, sse.REASONING))

# Response states of one connection.
_IDLE, _HEAD, _CHUNKED, _LENGTH, _UNTIL_CLOSE = range(5)
CONNECT_TIMEOUT_S = 10.0
_MAX_HEAD = 64 * 1024
_MAX_ERROR_BODY = 64 * 1024


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
            raise BenchmarkError(
                f"cannot use {base_url!r} as a server URL: write http://HOST:PORT"
            )
        tls = parts.scheme == "https"
        prefix = parts.path.rstrip("/")
        # Accept both http://host:8000 and http://host:8000/v1.
        prefix = prefix.removesuffix("/v1")
        return cls(parts.hostname, parts.port or (443 if tls else 80), tls, prefix)

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"

    def url(self, path: str) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}{self.prefix}{path}"

    def post(self, path: str, body: bytes) -> bytes:
        """The bytes of one streaming POST: built once, before the clock runs."""
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.authority}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n"
        )
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            head += f"Authorization: Bearer {key}\r\n"
        return head.encode("latin-1") + b"\r\n" + body


class Exchange:
    """One request and its response as the client saw them; filled in by the protocol."""

    __slots__ = (
        "t_send", "t_first", "t_last", "itl", "chunks", "reasoning_chunks", "usage",
        "error", "status", "saw_done", "received", "retryable", "future", "timer",
    )

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.t_send = 0.0
        self.t_first = 0.0
        self.t_last = 0.0
        self.itl: list[float] = []
        self.chunks = 0
        self.reasoning_chunks = 0
        self.usage: dict | None = None
        self.error: str | None = None
        self.status = 0
        self.saw_done = False
        self.received = False  # any response byte yet
        self.retryable = False
        self.future = future
        self.timer: asyncio.TimerHandle | None = None


class StreamProtocol(asyncio.Protocol):
    """One keep-alive connection; decodes a streamed response as it arrives."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.state = _IDLE
        self.closed = False
        self.used = 0
        self._head = b""
        self._cbuf = b""
        self._chunk_left = 0
        self._need_crlf = False
        self._trailers = False
        self._length_left = 0
        self._keep_alive = True
        self._error_body = b""
        self._sse = sse.SseParser()
        self._fast = False  # chunked 200 response with nothing partial buffered
        self._clock = pool.clock

    # asyncio callbacks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        ex = self.exchange
        if ex is None:
            return
        if self.state == _UNTIL_CLOSE:
            self._end_body()
            return
        if not ex.received and self.used > 1:
            # The server closed a kept-alive connection as we reused it: safe to resend.
            ex.retryable = True
        reason = f"{exc}" if exc else "closed by the server"
        self._fail(f"connection lost: {reason}, mid-response after {ex.chunks} chunks")

    def data_received(self, data: bytes) -> None:
        now = self._clock()
        ex = self.exchange
        if ex is None:
            # Bytes nobody asked for: the connection is in an unknown state.
            self._close()
            return
        if self._fast:
            # The shape of nearly every read of a token stream: one whole HTTP chunk
            # holding one whole one-line event, b"e3\r\ndata: {...}\n\n\r\n".
            i = data.find(b"\r\n", 0, 12)
            if i > 0 and data.startswith(b"data: ", i + 2) and data.endswith(b"\n\n\r\n"):
                payload = data[i + 8 : -4]
                if b"\n" not in payload:
                    try:
                        size = int(data[:i], 16)
                    except ValueError:
                        size = -1
                    if size == len(data) - i - 4:
                        self._on_payload(payload, now, ex)
                        return
            self._on_chunked(data, now, ex)
            return
        state = self.state
        if state == _CHUNKED:
            self._on_chunked(data, now, ex)
        elif state == _HEAD:
            self._on_head(data, now, ex)
        elif state == _LENGTH:
            self._on_length(data, now, ex)
        elif state == _UNTIL_CLOSE:
            self._on_body(data, now, ex)

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost does the rest

    # request side ------------------------------------------------------------------

    def send(self, request: bytes, exchange: Exchange) -> None:
        self.exchange = exchange
        self.state = _HEAD
        self.used += 1
        self._head = b""
        self._cbuf = b""
        self._chunk_left = 0
        self._need_crlf = False
        self._trailers = False
        self._error_body = b""
        self._sse = sse.SseParser()
        self._fast = False
        assert self.transport is not None
        self.transport.write(request)
        # The request is in the kernel now: time to send is not time to first token.
        exchange.t_send = _perf()

    def timeout(self, seconds: float) -> None:
        ex = self.exchange
        if ex is not None:
            self._fail(f"timeout: no end of response after {seconds:g} s, {ex.chunks} chunks")
            self._close()

    # response side -----------------------------------------------------------------

    def _on_head(self, data: bytes, now: float, ex: Exchange) -> None:
        ex.received = True
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            if len(head) > _MAX_HEAD:
                self._protocol_error("no end of headers")
                self._close()
            else:
                self._head = head
            return
        self._head = b""
        lines = head[:end].decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        try:
            version, status = status_line[0], int(status_line[1])
        except (IndexError, ValueError):
            self._protocol_error(f"bad status line {lines[0][:80]!r}")
            return
        ex.status = status
        chunked = False
        length = None
        self._keep_alive = version == "HTTP/1.1"
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            value = value.strip().lower()
            if name == "transfer-encoding":
                chunked = "chunked" in value
            elif name == "content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
            elif name == "connection":
                if "close" in value:
                    self._keep_alive = False
                elif "keep-alive" in value:
                    self._keep_alive = True
        if status == 100:
            self._on_head(head[end + 4 :], now, ex)  # an interim response: read on
            return
        rest = head[end + 4 :]
        if chunked:
            self.state = _CHUNKED
            self._fast = status == 200
            if rest:
                self._on_chunked(rest, now, ex)
        elif length is not None:
            self.state = _LENGTH
            self._length_left = length
            if length == 0:
                self._end_body()
            elif rest:
                self._on_length(rest, now, ex)
        else:
            self.state = _UNTIL_CLOSE
            self._keep_alive = False
            if rest:
                self._on_body(rest, now, ex)

    def _on_length(self, data: bytes, now: float, ex: Exchange) -> None:
        body = data[: self._length_left]
        self._length_left -= len(body)
        self._on_body(body, now, ex)
        if self._length_left <= 0 and self.exchange is ex:
            self._end_body()

    def _on_chunked(self, data: bytes, now: float, ex: Exchange) -> None:
        """De-chunk any read: parts of chunks, several chunks, trailers; then the events."""
        buf = self._cbuf + data if self._cbuf else data
        self._cbuf = b""
        n = len(buf)
        pos = 0
        done = False
        if self._chunk_left:  # the rest of a chunk begun in an earlier read
            pos = min(self._chunk_left, n)
            self._on_body(buf[:pos], now, ex)
            self._chunk_left -= pos
            self._need_crlf = not self._chunk_left
        if self._need_crlf:
            if n - pos < 2:
                self._cbuf = buf[pos:]
                pos = n
            elif buf.startswith(b"\r\n", pos):
                pos += 2
                self._need_crlf = False
            else:
                self._protocol_error("bad chunk terminator")
                return
        while pos < n and self.exchange is ex:
            j = buf.find(b"\r\n", pos)
            if j < 0:
                if n - pos > 4096:
                    self._protocol_error("chunk size line too long")
                    return
                self._cbuf = buf[pos:]
                break
            line = buf[pos:j]
            if self._trailers:
                pos = j + 2
                if not line:
                    done = True
                    break
                continue
            try:
                size = int(line, 16)
            except ValueError:
                size = _chunk_size(line)
            if size < 0:
                self._protocol_error(f"bad chunk size {line[:40]!r}")
                return
            start = j + 2
            if size == 0:
                self._trailers = True
                pos = start
                continue
            end = start + size
            if end + 2 <= n:  # a whole chunk: the usual case
                if not buf.startswith(b"\r\n", end):
                    self._protocol_error("bad chunk terminator")
                    return
                pos = end + 2
                # One whole one-line event, nothing pending: skip the SSE buffer.
                if (
                    ex.status == 200
                    and buf.startswith(b"data: ", start)
                    and buf.startswith(b"\n\n", end - 2)
                    and buf.find(b"\n", start, end - 2) < 0
                    and not self._sse.pending
                    and not self._sse.split_cr
                ):
                    self._on_payload(buf[start + 6 : end - 2], now, ex)
                else:
                    self._on_body(buf[start:end], now, ex)
                continue
            # The last chunk of this read is cut short: keep its state for the next read.
            stop = min(end, n)
            self._on_body(buf[start:stop], now, ex)
            self._chunk_left = end - stop
            self._need_crlf = not self._chunk_left
            self._cbuf = buf[stop:]
            break
        if done and self.exchange is ex:
            self._end_body()
        elif self.exchange is ex:
            self._fast = (
                ex.status == 200 and not self._cbuf and not self._chunk_left
                and not self._need_crlf and not self._sse.pending and not self._sse.split_cr
            )

    def _on_body(self, body: bytes, now: float, ex: Exchange) -> None:
        if ex.status != 200:
            if len(self._error_body) < _MAX_ERROR_BODY:
                self._error_body += body
            return
        for payload in self._sse.feed(body):
            self._on_payload(payload, now, ex)

    def _on_payload(self, payload: bytes, now: float, ex: Exchange) -> None:
        kind = _classify(payload)
        if kind == _PARSE:
            event = sse.parse_event(payload)
            if event.error is not None and ex.error is None:
                ex.error = event.error
            if event.usage is not None:
                ex.usage = event.usage
            kind = event.kind
        if kind in _TOKEN_KINDS:
            if ex.chunks:
                ex.itl.append(now - ex.t_last)
            else:
                ex.t_first = now
            ex.t_last = now
            ex.chunks += 1
            if kind == _REASONING:
                ex.reasoning_chunks += 1
        elif kind == _DONE:
            ex.saw_done = True

    def _end_body(self) -> None:
        ex = self.exchange
        if ex is None:
            return
        now = self._clock()
        if ex.status == 200:
            # A last event without its blank line still counts, as the body has ended.
            for payload in self._sse.flush():
                self._on_payload(payload, now, ex)
        if ex.error is None:
            if ex.status != 200:
                text = self._error_body[:300].decode("utf-8", "replace").strip()
                ex.error = f"http {ex.status}: {text or '(empty body)'}"
            elif ex.chunks == 0:
                ex.error = "no tokens: no SSE event carried a token (is streaming on?)"
        self.state = _IDLE
        self.exchange = None
        if self._keep_alive and not self.closed:
            self.pool.release(self)
        else:
            self._close()
        _resolve(ex)

    def _protocol_error(self, what: str) -> None:
        self._fail(f"malformed HTTP response: {what}")
        self._close()

    def _fail(self, reason: str) -> None:
        ex = self.exchange
        if ex is None:
            return
        if ex.error is None:
            ex.error = reason
        self.exchange = None
        self.state = _IDLE
        _resolve(ex)

    def _close(self) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.transport is not None:
            self.transport.abort()


def _chunk_size(line: bytes) -> int:
    """The size of a chunk line with extensions (``1a;name=value``); -1 if unreadable."""
    try:
        return int(line.split(b";", 1)[0].strip(), 16)
    except ValueError:
        return -1


def _resolve(ex: Exchange) -> None:
    if ex.timer is not None:
        ex.timer.cancel()
    if not ex.future.done():
        ex.future.set_result(None)


class Pool:
    """Keep-alive connections to one target, opened ahead of the measured window."""

    def __init__(self, target: Target, clock: Callable[[], float] | None = None) -> None:
        self.target = target
        self.clock = clock or arrival_clock()
        self.idle: list[StreamProtocol] = []
        self._all: set[StreamProtocol] = set()
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if target.tls else None

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
        """Send one request and wait for its whole response; never raises for I/O."""
        loop = asyncio.get_running_loop()
        for attempt in (0, 1):
            ex = Exchange(loop.create_future())
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
