"""One keep-alive connection of the streaming client: send a request, parse its response.

``StreamProtocol`` is an asyncio Protocol: the event loop calls ``data_received`` with the
bytes of each read, and the protocol decodes the response head, then a chunked, a
``Content-Length`` or an until-close body, splits the SSE events and classifies each one
into the ``Exchange`` (token times, counts, usage, error). This is the client's per-token
hot path (benchmarks/client_capacity.py measures it): the module-level aliases below save
an attribute lookup per event. What runs once per response (the ``Exchange``, the head's
parse) is in tuner/bench/http_response.py. The pool that owns the connections is in
tuner/bench/http.py; this module knows it only as an ``Owner`` (its clock, and where a
connection goes when it is free or gone), so it never imports it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from tuner.bench import sse
from tuner.bench.http_response import Exchange, chunk_size, parse_head, resolve

__all__ = ["Exchange", "Owner", "StreamProtocol"]

_classify = sse.classify
_REASONING = sse.REASONING
_PARSE = sse.PARSE
_DONE = sse.DONE
_ROLE = sse.ROLE
# Every chunk with choices starts or extends the clock (TTFT, ITL, E2EL), as in vllm
# bench serve; all but the chat role announcement are tokens.
_TIMED_KINDS = frozenset((sse.CONTENT, sse.REASONING, sse.ROLE))

# Response states of one connection.
_IDLE, _HEAD, _CHUNKED, _LENGTH, _UNTIL_CLOSE = range(5)
_MAX_HEAD = 64 * 1024
_MAX_ERROR_BODY = 64 * 1024


class Owner(Protocol):
    """What a connection needs from the pool that owns it (tuner/bench/http.py ``Pool``)."""

    clock: Callable[[], float]
    """Stamps each read (tuner/bench/clock.py)."""

    def release(self, conn: StreamProtocol) -> None:
        """``conn`` finished its exchange and may take another."""

    def forget(self, conn: StreamProtocol) -> None:
        """``conn`` is closed: never hand it out again."""


class StreamProtocol(asyncio.Protocol):
    """One keep-alive connection; decodes a streamed response as it arrives."""

    def __init__(self, pool: Owner) -> None:
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
        # exchange.t_send was stamped by the pool before it took this connection.
        self.transport.write(request)

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
        try:
            parsed = parse_head(head[:end])
        except ValueError as exc:
            self._protocol_error(str(exc))
            return
        status = ex.status = parsed.status
        self._keep_alive = parsed.keep_alive
        if status == 100:
            self._on_head(head[end + 4 :], now, ex)  # an interim response: read on
            return
        rest = head[end + 4 :]
        length = parsed.length
        if parsed.chunked:
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
                size = chunk_size(line)
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
                ex.status == 200
                and not self._cbuf
                and not self._chunk_left
                and not self._need_crlf
                and not self._sse.pending
                and not self._sse.split_cr
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
        if kind in _TIMED_KINDS:
            if ex.timed:
                ex.itl.append(now - ex.t_last)
            else:
                ex.t_first = now
            ex.t_last = now
            ex.timed += 1
            if kind != _ROLE:
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
        resolve(ex)

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
        resolve(ex)

    def _close(self) -> None:
        self.closed = True
        self.pool.forget(self)
        if self.transport is not None:
            self.transport.abort()
