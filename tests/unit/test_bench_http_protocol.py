"""The streaming HTTP/1.1 protocol fed hand-made bytes: framing, odd splits, every failure."""

from __future__ import annotations

import asyncio
import json

import pytest

from tuner.bench.http import Pool, Target
from tuner.bench.http_protocol import Exchange, StreamProtocol
from tuner.bench.level import to_record

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


def event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def token(text: str) -> bytes:
    return event({"choices": [{"index": 0, "text": text, "finish_reason": None}], "usage": None})


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


END = b"0\r\n\r\n"
BODY = (
    chunk(token(" a"))
    + chunk(token(" b") + token(" c"))  # two events in one chunk
    + chunk(event({"choices": [], "usage": USAGE}))
    + chunk(b"data: [DONE]\n\n")
    + END
)


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.aborted = False

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.written += data

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True


def exchange_with(
    reads: list[bytes], *, lost: Exception | None | bool = False
) -> tuple[Exchange, StreamProtocol, Pool]:
    """Feed ``reads`` to a fresh connection as if they came off the socket."""
    loop = asyncio.new_event_loop()
    try:
        pool = Pool(Target.from_url("http://127.0.0.1:9"))
        conn = StreamProtocol(pool)
        conn.connection_made(FakeTransport())
        ex = Exchange(loop.create_future())
        conn.send(b"POST / HTTP/1.1\r\n\r\n", ex)
        for data in reads:
            conn.data_received(data)
        if lost is not False:
            conn.connection_lost(lost if isinstance(lost, Exception) else None)
        return ex, conn, pool
    finally:
        loop.close()


def split_every(data: bytes, step: int) -> list[bytes]:
    return [data[i : i + step] for i in range(0, len(data), step)]


def test_a_whole_stream_in_one_read() -> None:
    ex, conn, pool = exchange_with([HEAD + BODY])
    assert ex.error is None
    assert ex.chunks == 3 and len(ex.itl) == 2
    assert ex.usage == USAGE and ex.saw_done
    assert ex.t_send <= ex.t_first <= ex.t_last
    assert ex.future.done()
    assert pool.idle == [conn]  # kept alive for the next request


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 7, 11, 13, 50])
def test_reads_split_at_odd_byte_boundaries(step: int) -> None:
    ex, _, _ = exchange_with(split_every(HEAD + BODY, step))
    assert ex.error is None
    assert (ex.chunks, ex.usage, ex.saw_done) == (3, USAGE, True)


def test_every_two_way_split() -> None:
    data = HEAD + BODY
    for cut in range(1, len(data)):
        ex, _, _ = exchange_with([data[:cut], data[cut:]])
        assert (ex.error, ex.chunks, ex.usage) == (None, 3, USAGE), cut


def test_usage_only_final_chunk_and_missing_done() -> None:
    body = chunk(token(" a")) + chunk(event({"choices": [], "usage": USAGE})) + END
    ex, _, _ = exchange_with([HEAD + body])
    assert ex.error is None and ex.usage == USAGE and not ex.saw_done


def test_last_event_without_blank_line_still_counts() -> None:
    body = chunk(token(" a")) + chunk(b'data: {"choices":[{"text":" z"}]}') + END
    ex, _, _ = exchange_with([HEAD + body])
    assert ex.error is None and ex.chunks == 2


def test_chunk_extensions_and_trailers() -> None:
    data = token(" a")
    body = b"%x;name=value\r\n%s\r\n" % (len(data), data) + b"0\r\nx-trailer: 1\r\n\r\n"
    ex, _, _ = exchange_with([HEAD + body])
    assert ex.error is None and ex.chunks == 1


def test_http_error_status_keeps_the_body_as_reason() -> None:
    body = b'{"error": "model overloaded"}'
    head = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: %d\r\n\r\n" % len(body)
    ex, conn, pool = exchange_with([head, body])
    assert ex.error == 'http 503: {"error": "model overloaded"}'
    assert pool.idle == [conn]


def test_http_500_chunked() -> None:
    head = b"HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n"
    ex, _, _ = exchange_with([head + chunk(b"boom") + END])
    assert ex.error == "http 500: boom"


def test_error_event_in_the_middle_of_a_stream() -> None:
    body = chunk(token(" a")) + chunk(event({"error": {"message": "engine died"}})) + END
    ex, _, _ = exchange_with([HEAD + body])
    assert ex.error == "error event: engine died"
    assert ex.chunks == 1


def test_malformed_sse_is_an_error_with_the_payload() -> None:
    body = chunk(token(" a")) + chunk(b"data: {not json\n\n") + END
    ex, _, _ = exchange_with([HEAD + body])
    assert ex.error is not None and ex.error.startswith("malformed SSE:")


def test_connection_reset_mid_stream() -> None:
    ex, conn, pool = exchange_with(
        [HEAD + chunk(token(" a"))], lost=ConnectionResetError("reset by peer")
    )
    assert ex.error is not None and ex.error.startswith("connection lost: reset by peer")
    assert "after 1 chunks" in ex.error
    assert conn.closed and conn not in pool.idle


def test_server_closing_mid_stream_without_error() -> None:
    ex, _, _ = exchange_with([HEAD + chunk(token(" a"))], lost=None)
    assert ex.error is not None and "closed by the server" in ex.error


def test_a_200_without_tokens_is_an_error() -> None:
    body = b'{"choices": [{"text": "not streamed"}]}'
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body)
    ex, _, _ = exchange_with([head + body])
    assert ex.error is not None and ex.error.startswith("no tokens")


def test_body_until_close_with_http_1_0() -> None:
    head = b"HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
    ex, conn, pool = exchange_with([head + token(" a") + token(" b")], lost=None)
    assert ex.error is None and ex.chunks == 2
    assert conn not in pool.idle


def test_connection_close_header_is_honoured() -> None:
    head = HEAD.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n")
    ex, conn, pool = exchange_with([head + BODY])
    assert ex.error is None and conn not in pool.idle and conn.closed


@pytest.mark.parametrize("bad", [b"zz\r\n", b"-5\r\n", b"5\r\nabcdeXX"])
def test_bad_chunking_is_a_protocol_error(bad: bytes) -> None:
    ex, conn, _ = exchange_with([HEAD + bad + b"\r\n" * 3])
    assert ex.error is not None and ex.error.startswith("malformed HTTP response")
    assert conn.closed


def test_garbage_status_line() -> None:
    ex, _, _ = exchange_with([b"SSH-2.0-OpenSSH\r\n\r\n"])
    assert ex.error is not None and ex.error.startswith("malformed HTTP response")


def test_timeout_ends_the_exchange_and_drops_the_connection() -> None:
    loop = asyncio.new_event_loop()
    try:
        pool = Pool(Target.from_url("http://127.0.0.1:9"))
        conn = StreamProtocol(pool)
        transport = FakeTransport()
        conn.connection_made(transport)
        ex = Exchange(loop.create_future())
        conn.send(b"x", ex)
        conn.data_received(HEAD + chunk(token(" a")))
        conn.timeout(2.5)
        assert ex.error == "timeout: no end of response after 2.5 s, 1 chunks"
        assert transport.aborted and ex.future.done()
    finally:
        loop.close()


def test_a_reused_connection_closed_before_any_byte_is_retryable() -> None:
    loop = asyncio.new_event_loop()
    try:
        pool = Pool(Target.from_url("http://127.0.0.1:9"))
        conn = StreamProtocol(pool)
        conn.connection_made(FakeTransport())
        first = Exchange(loop.create_future())
        conn.send(b"x", first)
        conn.data_received(HEAD + BODY)
        second = Exchange(loop.create_future())
        conn.send(b"x", second)
        conn.connection_lost(None)
        assert second.retryable and second.error is not None
    finally:
        loop.close()


def test_the_clock_starts_before_a_connection_is_taken_and_the_request_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As vllm bench serve's, whose clock starts before ``session.post``: a connect (no
    idle connection) and the write are in TTFT and E2EL, not only the server's time."""
    now = [100.0]

    def clock() -> float:
        return now[0]

    monkeypatch.setattr("tuner.bench.http._perf", clock, raising=False)
    monkeypatch.setattr("tuner.bench.http_protocol._perf", clock, raising=False)

    class SlowWrite(FakeTransport):
        def write(self, data: bytes) -> None:  # type: ignore[override]
            now[0] += 0.002  # the write takes 2 ms
            super().write(data)
            asyncio.get_running_loop().call_soon(answer)

    def answer() -> None:
        now[0] += 0.020  # the server's 20 ms to the first token
        conn.data_received(HEAD + BODY)

    async def connect() -> StreamProtocol:
        await asyncio.sleep(0)
        now[0] += 0.030  # no idle connection: a 30 ms connect
        conn.connection_made(SlowWrite())
        return conn

    async def main() -> Exchange:
        return await pool.exchange(b"POST / HTTP/1.1\r\n\r\n", 5.0)

    pool = Pool(Target.from_url("http://127.0.0.1:9"), clock=clock)
    conn = StreamProtocol(pool)
    monkeypatch.setattr(pool, "_connect", connect)
    ex = asyncio.run(main())
    assert ex.error is None and ex.chunks == 3
    assert ex.t_send == 100.0
    assert ex.t_first - ex.t_send == pytest.approx(0.052)  # connect + write + server
    assert ex.t_last - ex.t_send == pytest.approx(0.052)  # one read: E2EL the same


def chat_event(**delta: object) -> bytes:
    return event({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})


def chat_exchange(usage: dict | None) -> Exchange:
    """A chat stream, one read each: the role announcement at +50 ms, then 3 tokens."""
    now = [10.0]
    loop = asyncio.new_event_loop()
    try:
        pool = Pool(Target.from_url("http://127.0.0.1:9"), clock=lambda: now[0])
        conn = StreamProtocol(pool)
        conn.connection_made(FakeTransport())
        ex = Exchange(loop.create_future())
        ex.t_send = 10.0
        conn.send(b"x", ex)
        tail = chunk(event({"choices": [], "usage": usage})) if usage else b""
        reads = [
            (10.000, HEAD),
            (10.050, chunk(chat_event(role="assistant", content=""))),
            (10.0501, chunk(chat_event(reasoning_content=" r"))),
            (10.060, chunk(chat_event(content=" a"))),
            (10.070, chunk(chat_event(content=" b")) + tail + chunk(b"data: [DONE]\n\n") + END),
        ]
        for at, data in reads:
            now[0] = at
            conn.data_received(data)
        assert ex.future.done()
        return ex
    finally:
        loop.close()


def test_the_chat_role_announcement_is_timed_as_vllm_does_but_is_not_a_token() -> None:
    """vllm bench serve's chat client times every chunk with choices: the role chunk sets
    TTFT and the first token after it adds one (near-zero) ITL gap. It carries no token."""
    ex = chat_exchange(usage=None)
    assert ex.error is None
    assert ex.t_first == 10.050 and ex.t_last == 10.070  # TTFT at the role chunk
    assert ex.itl == pytest.approx([0.0001, 0.0099, 0.010])  # one gap more than tokens - 1
    assert (ex.timed, ex.chunks, ex.reasoning_chunks) == (4, 3, 1)
    record = to_record(ex, concurrency=1, round_index=0, index=0, t0=10.0, expected_prompt_tokens=7)
    assert record.ttft_s == pytest.approx(0.050) and record.e2el_s == pytest.approx(0.070)
    assert len(record.itl_s) == 3 and record.role_chunks == 1
    # No usage: one token per token-bearing chunk, the role chunk not among them.
    assert (record.output_tokens, record.reasoning_tokens, record.tokens_estimated) == (
        3,
        1,
        True,
    )
    assert record.tokens_per_chunk == 1.0


def test_the_role_announcement_is_not_in_the_reasoning_split() -> None:
    # Usage without details: 9 tokens split as the 3 token chunks (1 reasoning), not 4.
    usage = {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}
    record = to_record(
        chat_exchange(usage),
        concurrency=1,
        round_index=0,
        index=0,
        t0=10.0,
        expected_prompt_tokens=7,
    )
    assert (record.output_tokens, record.reasoning_tokens, record.content_tokens) == (9, 3, 6)
    assert record.tokens_per_chunk == 3.0
