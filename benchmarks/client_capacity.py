"""Client capacity and accuracy: how many streamed tokens/s the benchmark client can take.

Starts a minimal OpenAI-style streaming server in its own process (one SSE event per
token, each in its own write, HTTP/1.1 chunked, on a bare asyncio Protocol: it costs
less CPU per token than any client it measures), pins it to one core and the client to
the others, and reports for each client transport the client's CPU microseconds per
streamed token and its tokens/s, at 64 and 256 streams:

- ``tuner``: tuner's own engine (tuner.bench: asyncio Protocol transport, fast SSE path);
- ``aiohttp``: a plain aiohttp loop (``iter_any``) with tuner's SSE parser;
- ``aiohttp-json``: the same with ``json.loads`` per event, as ``vllm bench serve`` does;
- ``httpx``: a plain httpx loop (``aiter_raw``) with tuner's SSE parser;
- ``floor``: a bare asyncio Protocol that only counts bytes: what the event loop and the
  kernel cost by themselves, the floor under any asyncio client on this machine.

Both server modes are measured: ``flood`` (the client's ceiling in tokens/s; reads then
carry several events) and ``paced`` (every stream gets a token every ``--pace-ms``: one
read per token, as from a real server). ``--replay`` instead feeds each client stack the
same bytes in one process, without sockets: the user-space work per token alone, stable
even on a busy or virtualised machine.

tuner runs with 1, 2 and 4 client processes (``--workers``) in the flood runs, and its
tok/s with each is printed as a ratio to one process; where the machine has fewer cores
than the processes and the server need, it says that these cannot show the scaling.

Then an accuracy run against a paced server (50 ms to the first token, then 20 ms per
token, 256 streams): tuner and a plain aiohttp loop take turns, ``--repeat`` passes each,
each against a fresh record of the server's (``POST /truth/reset``). The truth is what
the server recorded at its writes (request read to first token written; between token
writes), not the pacing it was asked for, which a slow machine does not keep. For each
client: streams held, median TTFT and mean ITL as ratios to the truth, and whether
tuner flagged the pass client-limited (its own verdict; aiohttp has none).

    python benchmarks/client_capacity.py                      # the whole report
    python benchmarks/client_capacity.py --streams 64 --transports tuner aiohttp --repeat 5
    python benchmarks/client_capacity.py --modes flood --transports tuner --no-accuracy
    python benchmarks/client_capacity.py --workers 1 2 --client-cores all  # on 2 cores
    python benchmarks/client_capacity.py serve --port 8000 --first-ms 50 --interval-ms 20

The server modes: flood (``--interval-ms 0``: every open stream gets one token per
event-loop pass, as fast as its socket takes it) and paced (tokens on an absolute
schedule; ``GET /truth`` returns per-stream TTFT and mean ITL as written, peak open
streams and the server's CPU time; ``POST /truth/reset`` starts a new record).
Everything listens on 127.0.0.1 only; every run is bounded in requests and time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import itertools
import json
import math
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Run as a script from anywhere: the repository root holds the tuner package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tuner.bench.clock import arrival_clock  # noqa: E402
from tuner.bench.clock import run as run_stamped  # noqa: E402
from tuner.bench.summary import percentile  # noqa: E402

MODEL = "bench-model"

# One vLLM-sized event (about 200 bytes), so that parsing costs what it costs for real.
_COMPLETION_EVENT = (
    b'data: {"id":"cmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0","object":"text_completion",'
    b'"created":1730000000,"model":"bench-model","choices":[{"index":0,"text":" tok",'
    b'"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}\n\n'
)
_CHAT_EVENT = (
    'data: {"id":"chatcmpl-0f1e2d3c4b5a69788796a5b4c3d2e1f0","object":"chat.completion.chunk",'
    '"created":1730000000,"model":"bench-model","choices":[{"index":0,"delta":{"%s":" tok"},'
    '"logprobs":null,"finish_reason":null}]}\n\n'
)
_CHAT_CONTENT_EVENT = (_CHAT_EVENT % "content").encode()
_CHAT_REASONING_EVENT = (_CHAT_EVENT % "reasoning_content").encode()


def _chunk(payload: bytes) -> bytes:
    """HTTP/1.1 chunked framing of one payload."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


_FRAMED = {
    "completion": _chunk(_COMPLETION_EVENT),
    "content": _chunk(_CHAT_CONTENT_EVENT),
    "reasoning": _chunk(_CHAT_REASONING_EVENT),
}
_DONE = _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
_STREAM_HEADERS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)


def _json_response(status: int, body: object) -> bytes:
    data = json.dumps(body).encode()
    reason = {200: b"OK", 404: b"Not Found", 400: b"Bad Request"}.get(status, b"Error")
    return b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        status,
        reason,
        len(data),
        data,
    )


class Truth:
    """What the server really did: per finished stream, its TTFT and mean ITL."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.ttft_s: list[float] = []
        self.itl_mean_s: list[float] = []
        self.tokens = 0
        self.open = 0
        self.peak_open = 0
        self.cpu0 = _cpu_s()

    def report(self) -> dict[str, object]:
        return {
            "streams": len(self.ttft_s),
            "tokens": self.tokens,
            "peak_open_streams": self.peak_open,
            "ttft_ms_p50": _median_ms(self.ttft_s),
            "ttft_ms_p99": 1000 * percentile(sorted(self.ttft_s), 99) if self.ttft_s else None,
            "ttft_ms_mean": _mean_ms(self.ttft_s),
            "itl_ms_mean": _mean_ms(self.itl_mean_s),
            "server_cpu_s": _cpu_s() - self.cpu0,
        }


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _median_ms(values: list[float]) -> float | None:
    return statistics.median(values) * 1000 if values else None


def _mean_ms(values: list[float]) -> float | None:
    return statistics.fmean(values) * 1000 if values else None


class Stream:
    """One response in flight: which event to write, how many are left, when they went."""

    __slots__ = (
        "conn",
        "left",
        "total",
        "event",
        "reasoning_left",
        "usage",
        "t_recv",
        "t_first",
        "t_last",
        "prompt_tokens",
    )

    def __init__(
        self,
        conn: Conn,
        tokens: int,
        event: str,
        reasoning: int,
        usage: bool,
        prompt_tokens: int,
        t_recv: float,
    ) -> None:
        self.conn = conn
        self.left = tokens
        self.total = tokens
        self.event = _FRAMED[event]
        self.reasoning_left = reasoning
        self.usage = usage
        self.prompt_tokens = prompt_tokens
        self.t_recv = t_recv
        self.t_first = 0.0
        self.t_last = 0.0

    def write_token(self) -> bool:
        """Write one token event; True when the stream is finished."""
        now = time.perf_counter()
        # The headers go out with the first token: one write, not two, per stream start.
        head = b""
        if self.left == self.total:
            self.t_first = now
            head = _STREAM_HEADERS
        self.t_last = now
        if self.reasoning_left > 0:
            self.reasoning_left -= 1
            self.conn.transport.write(head + _FRAMED["reasoning"])
        else:
            self.conn.transport.write(head + self.event if head else self.event)
        self.left -= 1
        if self.left > 0:
            return False
        self.finish()
        return True

    def finish(self) -> None:
        server = self.conn.server
        if self.usage:
            usage = {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.total,
                "total_tokens": self.prompt_tokens + self.total,
            }
            tail = {
                "id": "cmpl-usage",
                "object": "text_completion",
                "created": 1730000000,
                "model": MODEL,
                "choices": [],
                "usage": usage,
            }
            self.conn.transport.write(_chunk(b"data: %s\n\n" % json.dumps(tail).encode()))
        self.conn.transport.write(_DONE)
        truth = server.truth
        truth.ttft_s.append(self.t_first - self.t_recv)
        if self.total > 1:
            truth.itl_mean_s.append((self.t_last - self.t_first) / (self.total - 1))
        truth.tokens += self.total
        truth.open -= 1
        self.conn.stream = None
        if self.conn.pending:
            self.conn.data_received(b"")


class Server:
    """Shared state: the flood ring, the pacing, the truth record."""

    def __init__(self, first_s: float, interval_s: float) -> None:
        self.first_s = first_s
        self.interval_s = interval_s
        self.truth = Truth()
        self.clock = arrival_clock()
        self.flood: list[Stream] = []
        self.flood_scheduled = False
        self.loop = asyncio.get_running_loop()
        self.due: list[tuple[float, int, Stream, int]] = []
        self.order = itertools.count()
        self.wake: asyncio.TimerHandle | None = None
        self.wake_at = 0.0

    def start(self, stream: Stream) -> None:
        self.truth.open += 1
        self.truth.peak_open = max(self.truth.peak_open, self.truth.open)
        if self.interval_s <= 0 and self.first_s <= 0:
            self.flood.append(stream)
            if not self.flood_scheduled:
                self.flood_scheduled = True
                self.loop.call_soon(self._flood_tick)
        else:
            self._pace(stream, 0)

    def _pace(self, stream: Stream, index: int) -> None:
        # One heap of (due time, stream) and one timer for the earliest: a timer per
        # token would cost the server more than the client spends reading it.
        due = stream.t_recv + self.first_s + index * self.interval_s
        heapq.heappush(self.due, (due, next(self.order), stream, index))
        if self.wake is None or due < self.wake_at:
            self._arm(due)

    def _arm(self, due: float) -> None:
        if self.wake is not None:
            self.wake.cancel()
        self.wake_at = due
        self.wake = self.loop.call_at(_loop_time(self.loop, due), self._pace_tick)

    def _pace_tick(self) -> None:
        self.wake = None
        now = time.perf_counter()
        due = self.due
        while due and due[0][0] <= now:
            _, _, stream, index = heapq.heappop(due)
            if stream.conn.closed:
                self.truth.open -= 1
                continue
            if not stream.write_token():
                nxt = stream.t_recv + self.first_s + (index + 1) * self.interval_s
                heapq.heappush(due, (nxt, next(self.order), stream, index + 1))
        if due:
            self._arm(due[0][0])

    def _flood_tick(self) -> None:
        # One token to every stream whose socket is not backed up, then let the loop run
        # (reads, new requests) before the next pass.
        alive = []
        for stream in self.flood:
            if stream.conn.closed:
                self.truth.open -= 1
                continue
            if stream.conn.transport.get_write_buffer_size() > 0 or not stream.write_token():
                alive.append(stream)
        self.flood = alive
        if alive:
            self.loop.call_soon(self._flood_tick)
        else:
            self.flood_scheduled = False


def _loop_time(loop: asyncio.AbstractEventLoop, perf_time: float) -> float:
    """Convert a perf_counter instant to the loop's clock (both monotonic on Linux)."""
    return loop.time() + (perf_time - time.perf_counter())


class Conn(asyncio.Protocol):
    """One client connection: parse requests (keep-alive), answer one at a time."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.buffer = b""
        self.pending = False
        self.stream: Stream | None = None
        self.closed = False
        self.t_data = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True

    def data_received(self, data: bytes) -> None:
        # When the loop's poll returned: the request was in the kernel by then, even if
        # this server was busy with other streams before it read it.
        self.t_data = self.server.clock()
        self.buffer += data
        while self.stream is None:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                self.pending = False
                return
            head = self.buffer[:head_end].decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(self.buffer) < end:
                self.pending = False
                return
            body = self.buffer[head_end + 4 : end]
            self.buffer = self.buffer[end:]
            self.pending = bool(self.buffer)
            self.handle(method, path, body)

    def handle(self, method: str, path: str, body: bytes) -> None:
        write = self.transport.write  # type: ignore[attr-defined]
        if method == "GET" and path == "/v1/models":
            write(
                _json_response(
                    200,
                    {"object": "list", "data": [{"id": MODEL, "object": "model", "root": MODEL}]},
                )
            )
        elif method == "GET" and path == "/health":
            write(_json_response(200, {}))
        elif method == "GET" and path == "/truth":
            write(_json_response(200, self.server.truth.report()))
        elif method == "POST" and path == "/truth/reset":
            self.server.truth.reset()
            write(_json_response(200, {}))
        elif method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
            request = json.loads(body)
            chat = path.endswith("chat/completions")
            tokens = int(request.get("max_completion_tokens") or request.get("max_tokens") or 16)
            usage = bool((request.get("stream_options") or {}).get("include_usage"))
            reasoning = tokens // 2 if chat and request.get("reasoning") else 0
            self.stream = Stream(
                self,
                tokens,
                "content" if chat else "completion",
                reasoning,
                usage,
                prompt_tokens=len(str(request.get("prompt", ""))) // 4,
                t_recv=self.t_data,
            )
            self.server.start(self.stream)
        else:
            write(_json_response(404, {"error": f"no route {method} {path}"}))


async def serve(host: str, port: int, first_s: float, interval_s: float) -> None:
    server = Server(first_s, interval_s)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: Conn(server), host, port, backlog=4096)
    bound = listener.sockets[0].getsockname()[1]
    print(f"listening on {host}:{bound}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    listener.close()


# ---------------------------------------------------------------------------------------
# Clients. Each runs in its own process, pinned, and reports the CPU time it spent while
# the measured pass ran and the tokens it received. A first pass at the same concurrency
# with one-token requests opens and warms the connections of the plain loops (tuner's
# engine warms its own before its window).


def _completions_body(tokens: int, index: int) -> bytes:
    body = {
        "model": MODEL,
        "prompt": f"capacity {index}",
        "max_tokens": tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }
    return json.dumps(body).encode()


async def _plain_aiohttp(
    url: str, streams: int, tokens: int, json_per_event: bool, reset_truth: bool = False
) -> dict:
    """A plain aiohttp loop; times each stream as ``vllm bench serve`` does.

    TTFT from just before ``session.post`` to the read that brought the first token, ITL
    between the reads that brought tokens, every read stamped with ``perf_counter`` when
    its coroutine runs. ``reset_truth``: ``POST /truth/reset`` after the warm pass, so
    that the server's record holds the measured streams only.
    """
    import aiohttp

    from tuner.bench.sse import CONTENT, PARSE, REASONING, SseParser, classify, parse_event

    connector = aiohttp.TCPConnector(limit=streams, limit_per_host=streams)
    timeout = aiohttp.ClientTimeout(total=600)
    received = 0
    in_flight = peak = 0
    ttft_s: list[float] = []
    itl_mean_s: list[float] = []

    async def one(session: aiohttp.ClientSession, index: int, max_tokens: int) -> None:
        nonlocal received, in_flight, peak
        headers = {"content-type": "application/json"}
        start = time.perf_counter()
        first = last = 0.0
        count = 0
        async with session.post(
            url, data=_completions_body(max_tokens, index), headers=headers
        ) as response:
            in_flight += 1
            peak = max(peak, in_flight)
            parser = SseParser()
            async for data in response.content.iter_any():
                now = time.perf_counter()  # every client timestamps each read
                for payload in parser.feed(data):
                    if json_per_event:
                        if payload == b"[DONE]" or not json.loads(payload).get("choices"):
                            continue
                    else:
                        kind = classify(payload)
                        if kind == PARSE:
                            kind = parse_event(payload).kind
                        if kind not in (CONTENT, REASONING):
                            continue
                    count += 1
                    if count == 1:
                        first = now
                    last = now
            in_flight -= 1
        received += count
        if count:
            ttft_s.append(first - start)
        if count > 1:
            itl_mean_s.append((last - first) / (count - 1))

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(one(session, i, 1) for i in range(streams)))
        if reset_truth:
            async with session.post(url.rsplit("/v1/", 1)[0] + "/truth/reset") as response:
                await response.read()
        received = peak = 0
        ttft_s.clear()
        itl_mean_s.clear()
        cpu0, t0 = _cpu_s(), time.perf_counter()
        await asyncio.gather(*(one(session, i, tokens) for i in range(streams)))
        return {
            "cpu_s": _cpu_s() - cpu0,
            "wall_s": time.perf_counter() - t0,
            "tokens": received,
            "peak_in_flight": peak,
            "ttft_ms_p50": _median_ms(ttft_s),
            "itl_ms_mean": _mean_ms(itl_mean_s),
        }


async def _plain_httpx(url: str, streams: int, tokens: int) -> dict:
    import httpx

    from tuner.bench.sse import CONTENT, PARSE, SseParser, classify, parse_event

    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    received = 0

    async def one(client: httpx.AsyncClient, index: int, max_tokens: int) -> None:
        nonlocal received
        headers = {"content-type": "application/json"}
        async with client.stream(
            "POST", url, content=_completions_body(max_tokens, index), headers=headers
        ) as response:
            parser = SseParser()
            async for data in response.aiter_raw():
                time.perf_counter()
                for payload in parser.feed(data):
                    kind = classify(payload)
                    if kind == PARSE:
                        kind = parse_event(payload).kind
                    if kind == CONTENT:
                        received += 1

    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        await asyncio.gather(*(one(client, i, 1) for i in range(streams)))
        received = 0
        cpu0, t0 = _cpu_s(), time.perf_counter()
        await asyncio.gather(*(one(client, i, tokens) for i in range(streams)))
        return {"cpu_s": _cpu_s() - cpu0, "wall_s": time.perf_counter() - t0, "tokens": received}


async def _floor(port: int, streams: int, tokens: int) -> dict:
    """No parsing at all: the event loop and the kernel, the cost any asyncio client pays."""
    loop = asyncio.get_running_loop()
    counts = {"reads": 0, "events": 0}

    class Counting(asyncio.Protocol):
        def __init__(self) -> None:
            self.done: asyncio.Future[None] | None = None

        def data_received(self, data: bytes) -> None:
            counts["reads"] += 1
            counts["events"] += data.count(b"\n\n")
            if data.endswith(b"0\r\n\r\n") and self.done and not self.done.done():
                self.done.set_result(None)

    conns = [await loop.create_connection(Counting, "127.0.0.1", port) for _ in range(streams)]

    async def one(conn: tuple, index: int, max_tokens: int) -> None:
        transport, protocol = conn
        protocol.done = loop.create_future()
        body = _completions_body(max_tokens, index)
        transport.write(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\ncontent-type: "
            b"application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        await protocol.done

    await asyncio.gather(*(one(c, i, 1) for i, c in enumerate(conns)))
    counts.update(reads=0, events=0)
    cpu0, t0 = _cpu_s(), time.perf_counter()
    await asyncio.gather(*(one(c, i, tokens) for i, c in enumerate(conns)))
    out = {
        "cpu_s": _cpu_s() - cpu0,
        "wall_s": time.perf_counter() - t0,
        "tokens": streams * tokens,
        "reads": counts["reads"],
    }
    for transport, _ in conns:
        transport.close()
    return out


def _tuner(base: str, streams: int, tokens: int, workers: int) -> dict:
    from tuner.bench import LoadSpec, measure_level
    from tuner.bench.summary import summarize

    load = LoadSpec(
        model=MODEL,
        prompt_tokens=8,
        max_tokens=tokens,
        concurrency=streams,
        requests=streams,
        warmup=0,
        workers=workers,
    )
    result = measure_level(base, load)
    summary = summarize(result)
    return {
        "cpu_s": result.client_lag.cpu_s,
        "wall_s": result.duration_s,
        "tokens": summary.output_tokens,
        "errors": summary.errors,
        "peak_in_flight": result.peak_in_flight,
        "ttft_ms_p50": summary.ttft_ms.p50,
        "itl_ms_mean": summary.itl_ms.mean,
        "lag_ms_p99": summary.client_lag_ms_p99,
        "client_limited": result.client_limited,
        "workers": result.workers,
    }


def client_main(args: argparse.Namespace) -> None:
    if args.cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(args.cpus))
    base = f"http://127.0.0.1:{args.port}"
    url = f"{base}/v1/completions"
    if args.loop == "uvloop":
        import uvloop  # optional: only to measure what it would bring

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    if args.transport == "tuner":
        out = _tuner(base, args.streams, args.tokens, args.workers)
    elif args.transport in ("aiohttp", "aiohttp-json"):
        json_per_event = args.transport == "aiohttp-json"
        out = asyncio.run(
            _plain_aiohttp(url, args.streams, args.tokens, json_per_event, args.reset_truth)
        )
    elif args.transport == "httpx":
        out = asyncio.run(_plain_httpx(url, args.streams, args.tokens))
    elif args.transport == "floor":
        out = asyncio.run(_floor(args.port, args.streams, args.tokens))
    else:
        raise SystemExit(f"unknown transport {args.transport}")
    print(json.dumps(out), flush=True)


# ---------------------------------------------------------------------------------------
# Replay: each client stack fed the same bytes in one process, no sockets, so that what
# is compared is the user-space work per token alone (a busy or virtualised machine
# makes the socket figures above noisy; these are stable to a few percent).


class _ReplayTransport(asyncio.Transport):
    def write(self, data: bytes) -> None:  # type: ignore[override]
        pass

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass


_REPLAY_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)


def _replay_reads(tokens: int, per_read: int) -> list[bytes]:
    framed = _FRAMED["completion"]
    return [framed * per_read for _ in range(tokens // per_read)]


async def _replay_tuner(reads: list[bytes]) -> int:
    from tuner.bench.http import Exchange, Pool, StreamProtocol, Target

    loop = asyncio.get_running_loop()
    conn = StreamProtocol(Pool(Target.from_url("http://127.0.0.1:1")))
    conn.connection_made(_ReplayTransport())
    ex = Exchange(loop.create_future())
    conn.send(b"", ex)
    conn.data_received(_REPLAY_HEAD)
    for data in reads:
        conn.data_received(data)  # the event loop calls this straight from the selector
    return ex.chunks


async def _replay_aiohttp(reads: list[bytes], json_per_event: bool) -> int:
    from aiohttp.client_proto import ResponseHandler

    from tuner.bench.sse import CONTENT, PARSE, REASONING, SseParser, classify, parse_event

    loop = asyncio.get_running_loop()
    proto = ResponseHandler(loop)
    proto.connection_made(_ReplayTransport())
    proto.set_response_params(read_bufsize=2**16)
    proto.data_received(_REPLAY_HEAD)
    _, payload = await proto.read()
    count = 0

    async def consume() -> None:
        nonlocal count
        parser = SseParser()
        async for data in payload.iter_any():
            time.perf_counter()
            for event in parser.feed(data):
                if json_per_event:
                    if json.loads(event).get("choices"):
                        count += 1
                    continue
                kind = classify(event)
                if kind == PARSE:
                    kind = parse_event(event).kind
                if kind in (CONTENT, REASONING):
                    count += 1

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    for data in reads:
        proto.data_received(data)  # wakes the consumer task, as a socket read would
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    payload.feed_eof()
    await task
    return count


async def _replay_baseline(reads: list[bytes]) -> int:
    # What the replay harness itself costs per read (two yields), to subtract from aiohttp.
    for _ in reads:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    return 0


def replay(args: argparse.Namespace) -> list[dict]:
    rows = []
    kinds = {
        "tuner": _replay_tuner,
        "aiohttp": lambda reads: _replay_aiohttp(reads, False),
        "aiohttp-json": lambda reads: _replay_aiohttp(reads, True),
        "baseline": _replay_baseline,
    }
    tokens = 64 * 1024
    for per_read in args.events_per_read:
        reads = _replay_reads(tokens, per_read)
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for name, run in kinds.items():
                cpu0 = time.process_time()
                got = asyncio.run(run(reads))
                cpu = time.process_time() - cpu0
                assert name == "baseline" or got == len(reads) * per_read, (name, got)
                best[name] = min(best.get(name, math.inf), cpu)
        base = best.pop("baseline")
        for name, cpu in best.items():
            net = cpu - (base if name != "tuner" else 0.0)
            row = {
                "transport": name,
                "events_per_read": per_read,
                "user_us_per_token": net / tokens * 1e6,
            }
            rows.append(row)
            print(
                f"replay {per_read:>2} events/read {name:>13}: "
                f"{row['user_us_per_token']:5.2f} us/token (user space, best of "
                f"{args.repeat})",
                flush=True,
            )
    return rows


# ---------------------------------------------------------------------------------------
# The report: start a server, run the clients, print a table.


FLOOD_SERVER_C = Path(__file__).resolve().parent / "flood_server.c"


def flood_server_binary() -> Path | None:
    """benchmarks/flood_server.c compiled (once per source version), or None without a C
    compiler. Built under the system's temporary directory, never in the repository."""
    import hashlib
    import shutil
    import tempfile

    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    digest = hashlib.sha256(FLOOD_SERVER_C.read_bytes()).hexdigest()[:12]
    binary = Path(tempfile.gettempdir()) / f"tuner-flood-server-{digest}"
    if not binary.exists():
        partial = binary.with_suffix(f".{os.getpid()}")
        built = subprocess.run(
            [compiler, "-O2", "-o", str(partial), str(FLOOD_SERVER_C)],
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            print(
                f"note: cannot build {FLOOD_SERVER_C.name} ({built.stderr.strip()[:200]}); "
                "flood runs use the Python server",
                file=sys.stderr,
            )
            return None
        partial.replace(binary)
    return binary


class ServerProcess:
    """The streaming server as a child process; always stopped on exit.

    ``native``: the C flood server (benchmarks/flood_server.c) instead of the Python one;
    flood mode only, and it keeps no per-stream truth (accuracy runs use the Python one).
    """

    def __init__(
        self, first_ms: float, interval_ms: float, cpu: int | None, native: Path | None = None
    ) -> None:
        if native is not None:
            argv = [str(native), "0"] + ([str(cpu)] if cpu is not None else [])
        else:
            argv = [
                sys.executable,
                __file__,
                "serve",
                "--port",
                "0",
                "--first-ms",
                str(first_ms),
                "--interval-ms",
                str(interval_ms),
            ]
            if cpu is not None:
                argv += ["--cpu", str(cpu)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("listening on"):
            self.stop()
            raise SystemExit(f"the stream server did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def get(self, path: str) -> dict:
        import httpx

        return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=10).json()

    def post(self, path: str) -> None:
        import httpx

        httpx.post(f"http://127.0.0.1:{self.port}{path}", timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _run_client(
    port: int,
    transport: str,
    streams: int,
    tokens: int,
    workers: int,
    cpus: list[int] | None,
    timeout_s: float,
    loop: str = "asyncio",
    reset_truth: bool = False,
) -> dict:
    argv = [
        sys.executable,
        __file__,
        "client",
        "--port",
        str(port),
        "--transport",
        transport,
        "--streams",
        str(streams),
        "--tokens",
        str(tokens),
        "--workers",
        str(workers),
        "--loop",
        loop,
    ]
    if cpus:
        argv += ["--cpus", *map(str, cpus)]
    if reset_truth:
        argv.append("--reset-truth")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise SystemExit(f"client {transport} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cores() -> list[int]:
    """The cores this process may run on (empty where the OS does not say)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def too_few_cores(cores: int, workers: int) -> str | None:
    """Why ``workers`` client processes cannot show scaling here, or None if they can.

    Each client process needs a core of its own and the server one more; with fewer,
    the processes share cores and their throughput says nothing about scaling.
    """
    needed = workers + 1
    if workers <= 1 or cores >= needed:
        return None
    return (
        f"this machine has {cores} cores: {workers} workers cannot show scaling "
        f"({workers} client processes and the server need {needed})"
    )


def scaling_lines(rows: list[dict], cores: int) -> list[str]:
    """tuner's flood tok/s by client processes, each as a ratio to the fewest measured."""
    lines = []
    by_streams: dict[int, dict[int, float]] = {}
    for row in rows:
        if row["mode"] == "flood" and row["transport"] == "tuner":
            by_streams.setdefault(row["streams"], {})[row["workers"]] = row["tokens_per_s"]
    for streams, by_workers in sorted(by_streams.items()):
        if len(by_workers) < 2:
            continue
        counts = sorted(by_workers)
        base = by_workers[counts[0]]
        parts = [f"x{counts[0]} {base:.0f} tok/s"]
        parts += [f"x{w} {by_workers[w]:.0f} ({by_workers[w] / base:.2f}x)" for w in counts[1:]]
        lines.append(f"scaling, flood {streams} streams, tuner: " + ", ".join(parts))
    if lines:
        counts = sorted({w for by_workers in by_streams.values() for w in by_workers})
        lines += [note for w in counts if (note := too_few_cores(cores, w))]
    return lines


def _placement(workers: int, share: bool = False) -> tuple[int | None, list[int] | None]:
    """The server on the last core, the client on the first ``workers`` of the others.

    ``share``: the client may use the server's core too (``--client-cores all``), so a
    machine with few cores can still run as many client processes as it has cores; the
    server then takes part of one client's core, and the figures say so.
    """
    cores = _cores()
    if len(cores) < 2:
        return None, None
    usable = cores if share else cores[:-1]
    return cores[-1], usable[: max(1, min(workers, len(usable)))]


def capacity(args: argparse.Namespace) -> list[dict]:
    """Each transport at each stream count, flood and paced; transports take turns."""
    rows = []
    others = [(t, 1) for t in args.transports if t != "tuner"]
    counts = sorted(set(args.workers))
    cores = len(_cores()) or os.cpu_count() or 1
    if "tuner" in args.transports and "flood" in args.modes:
        for workers in counts:
            if note := too_few_cores(cores, workers):
                print(f"note: {note}", flush=True)
    native = flood_server_binary() if args.server in ("auto", "c") else None
    if args.server == "c" and native is None:
        raise SystemExit("--server c: no C compiler could build benchmarks/flood_server.c")
    for mode in args.modes:
        interval = 0.0 if mode == "flood" else args.pace_ms
        server_kind = "c" if native is not None and mode == "flood" else "python"
        print(f"{mode}: {server_kind} server", flush=True)
        # Client processes raise the client's ceiling, which only the flood runs reach;
        # a paced run's rate is the server's.
        tuner_plans = [("tuner", w) for w in (counts if mode == "flood" else counts[:1])]
        plans = (tuner_plans if "tuner" in args.transports else []) + others
        for streams in args.streams:
            runs: dict[tuple[str, int], list[dict]] = {plan: [] for plan in plans}
            server_cpu, _ = _placement(1)
            with ServerProcess(
                0, interval, server_cpu, native if server_kind == "c" else None
            ) as server:
                for _ in range(args.repeat):
                    for transport, workers in plans:
                        _, client_cpus = _placement(workers, args.client_cores == "all")
                        server.post("/truth/reset")
                        run = _run_client(
                            server.port,
                            transport,
                            streams,
                            args.tokens,
                            workers,
                            client_cpus,
                            args.timeout,
                            args.loop,
                        )
                        run["server_cpu_s"] = server.get("/truth")["server_cpu_s"]
                        runs[(transport, workers)].append(run)
            for (transport, workers), done in runs.items():
                rows.append(
                    {
                        **_row(mode, streams, transport, workers, done),
                        "server": server_kind,
                        "client_cores": args.client_cores,
                    }
                )
    for line in scaling_lines(rows, cores):
        print(line, flush=True)
    return rows


def _row(mode: str, streams: int, transport: str, workers: int, runs: list[dict]) -> dict:
    us_all = [r["cpu_s"] / r["tokens"] * 1e6 for r in runs if r["tokens"]]
    tps = statistics.median(r["tokens"] / r["wall_s"] for r in runs if r["wall_s"])
    server_us = statistics.median(r["server_cpu_s"] / r["tokens"] * 1e6 for r in runs)
    reads = [r["reads"] / r["tokens"] for r in runs if r.get("reads")]
    row = {
        "mode": mode,
        "streams": streams,
        "transport": transport,
        "workers": workers,
        "client_us_per_token": statistics.median(us_all),
        "tokens_per_s": tps,
        "server_us_per_token": server_us,
        "us_all": [round(u, 2) for u in us_all],
        "reads_per_token": statistics.median(reads) if reads else None,
    }
    extra = f", {row['reads_per_token']:.2f} reads/token" if reads else ""
    print(
        f"{mode:>6} {streams:>4} streams {transport:>13} x{workers}: "
        f"{row['client_us_per_token']:6.2f} us/token (runs {row['us_all']}), "
        f"{tps:8.0f} tok/s; server {server_us:5.2f} us/token{extra}",
        flush=True,
    )
    return row


ACCURACY_TRANSPORTS = ("tuner", "aiohttp")


def accuracy_figures(transport: str, run: dict, truth: dict) -> dict:
    """One client's pass against the server's own record of the same pass.

    ``truth`` is the server's ``GET /truth``: TTFT from its request's arrival to its
    first token's write, ITL between its token writes, as it recorded them (not the
    pacing it was asked for: a slow machine writes late). The ratios are the client's
    figure over the truth's; 1.0 is exact. ``client_limited`` is tuner's own verdict
    (its event-loop lag and CPU), None for a client that has none.
    """
    return {
        "transport": transport,
        "held": run["peak_in_flight"],
        "server_peak_open": truth["peak_open_streams"],
        "truth_streams": truth["streams"],
        "ttft_ms_p50": run["ttft_ms_p50"],
        "truth_ttft_ms_p50": truth["ttft_ms_p50"],
        "ttft_ratio": run["ttft_ms_p50"] / truth["ttft_ms_p50"],
        "itl_ms_mean": run["itl_ms_mean"],
        "truth_itl_ms_mean": truth["itl_ms_mean"],
        "itl_ratio": run["itl_ms_mean"] / truth["itl_ms_mean"],
        "client_limited": run.get("client_limited"),
        "lag_ms_p99": run.get("lag_ms_p99"),
        "client_us_per_token": run["cpu_s"] / run["tokens"] * 1e6,
        "server_us_per_token": truth["server_cpu_s"] / truth["tokens"] * 1e6,
    }


def accuracy_summary(runs: list[dict]) -> dict:
    """One client's passes: the median of each figure, and how often tuner flagged one."""

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    flags = [r["client_limited"] for r in runs if r["client_limited"] is not None]
    return {
        "transport": runs[0]["transport"],
        "runs": len(runs),
        "held": min(r["held"] for r in runs),
        **{
            key: median(key)
            for key in (
                "ttft_ms_p50",
                "truth_ttft_ms_p50",
                "ttft_ratio",
                "itl_ms_mean",
                "truth_itl_ms_mean",
                "itl_ratio",
                "client_us_per_token",
            )
        },
        "client_limited_runs": sum(flags) if flags else None,
    }


def accuracy(args: argparse.Namespace) -> dict:
    """tuner and plain aiohttp, taking turns, against one paced server's own record."""
    server_cpu, client_cpus = _placement(1)
    runs: dict[str, list[dict]] = {t: [] for t in ACCURACY_TRANSPORTS}
    print(
        f"accuracy, {args.accuracy_streams} streams paced {args.first_ms:g} ms + "
        f"{args.interval_ms:g} ms/token, {args.tokens} tokens, {args.repeat} "
        f"run{'s' if args.repeat != 1 else ''} a client; "
        "truth: what the server recorded at its writes",
        flush=True,
    )
    with ServerProcess(args.first_ms, args.interval_ms, server_cpu) as server:
        for _ in range(args.repeat):
            for transport in ACCURACY_TRANSPORTS:
                server.post("/truth/reset")
                run = _run_client(
                    server.port,
                    transport,
                    args.accuracy_streams,
                    args.tokens,
                    1,
                    client_cpus,
                    args.timeout,
                    args.loop,
                    reset_truth=transport != "tuner",
                )
                one = accuracy_figures(transport, run, server.get("/truth"))
                runs[transport].append(one)
                flag = ""
                if one["client_limited"] is not None:
                    flag = (
                        f"; lag p99 {one['lag_ms_p99']:.1f} ms, "
                        f"{'client-limited' if one['client_limited'] else 'not client-limited'}"
                    )
                print(
                    f"  {transport:>7}: held {one['held']} (server saw "
                    f"{one['server_peak_open']}); TTFT p50 {one['ttft_ms_p50']:.2f} ms vs "
                    f"truth {one['truth_ttft_ms_p50']:.2f} ({one['ttft_ratio']:.3f}x); ITL "
                    f"mean {one['itl_ms_mean']:.3f} ms vs truth {one['truth_itl_ms_mean']:.3f} "
                    f"({one['itl_ratio']:.4f}x); client {one['client_us_per_token']:.1f} "
                    f"us/token, server {one['server_us_per_token']:.1f}{flag}",
                    flush=True,
                )
    summary = {t: accuracy_summary(r) for t, r in runs.items()}
    for transport, row in summary.items():
        flagged = ""
        if row["client_limited_runs"] is not None:
            flagged = f"; flagged client-limited in {row['client_limited_runs']} of {row['runs']}"
        print(
            f"accuracy, {transport:>7}, median of {row['runs']}: held {row['held']}; TTFT p50 "
            f"{row['ttft_ratio']:.2f}x the truth ({row['ttft_ms_p50']:.1f} vs "
            f"{row['truth_ttft_ms_p50']:.1f} ms); ITL mean {row['itl_ratio']:.4f}x "
            f"({row['itl_ms_mean']:.3f} vs {row['truth_itl_ms_mean']:.3f} ms){flagged}",
            flush=True,
        )
    return {
        "streams": args.accuracy_streams,
        "first_ms": args.first_ms,
        "interval_ms": args.interval_ms,
        "runs": [r for t in ACCURACY_TRANSPORTS for r in runs[t]],
        "summary": summary,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[64, 256])
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=("flood", "paced"),
        default=["flood", "paced"],
        help="flood: tokens as fast as the socket takes them; paced: every "
        "--pace-ms per stream, one read per token",
    )
    parser.add_argument("--pace-ms", type=float, default=10.0)
    parser.add_argument(
        "--server",
        choices=("auto", "c", "python"),
        default="auto",
        help="flood runs: the C server (benchmarks/flood_server.c, built with "
        "the machine's cc; auto: when one is found) or the Python one; paced "
        "and accuracy runs always use the Python server",
    )
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--transports", nargs="+", default=list(TRANSPORTS), choices=TRANSPORTS)
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[1, 2, 4],
        help="client processes for the tuner transport in the flood runs (the paced "
        "runs use the fewest); each count's tok/s is printed as a ratio to the fewest, "
        "with a note where the machine has too few cores to show it",
    )
    parser.add_argument(
        "--client-cores",
        choices=("free", "all"),
        default="free",
        help="free: the client gets every core but the server's (the "
        "clean measurement); all: the server's core too, so N client "
        "processes can run on an N-core machine (the server then shares)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per figure (median), accuracy runs too"
    )
    parser.add_argument("--accuracy-streams", type=int, default=256)
    parser.add_argument("--first-ms", type=float, default=50.0)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--no-accuracy", action="store_true")
    parser.add_argument("--no-capacity", action="store_true")
    parser.add_argument(
        "--replay", action="store_true", help="only the socket-free replay of each client stack"
    )
    parser.add_argument("--events-per-read", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--timeout", type=float, default=300.0, help="per client run")
    parser.add_argument(
        "--loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the plain clients' event loop (uvloop must be installed); "
        "tuner's engine always runs its own stamping selector loop",
    )
    sub = parser.add_subparsers(dest="command")
    serve_p = sub.add_parser("serve", help="run the streaming server")
    serve_p.add_argument("--port", type=int, default=0)
    serve_p.add_argument("--first-ms", type=float, default=0.0, help="delay to first token")
    serve_p.add_argument("--interval-ms", type=float, default=0.0, help="0: flood")
    serve_p.add_argument("--cpu", type=int, default=None, help="pin to this core")
    client_p = sub.add_parser("client", help="run one client pass against a server")
    client_p.add_argument("--port", type=int, required=True)
    client_p.add_argument("--transport", choices=TRANSPORTS, default="tuner")
    client_p.add_argument("--streams", type=int, default=64)
    client_p.add_argument("--tokens", type=int, default=256)
    client_p.add_argument("--workers", type=int, default=1)
    client_p.add_argument("--cpus", type=int, nargs="*")
    client_p.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    client_p.add_argument(
        "--reset-truth",
        action="store_true",
        help="aiohttp: POST /truth/reset after the warm pass (the accuracy run)",
    )
    args = parser.parse_args(argv)

    if args.command == "serve":
        if args.cpu is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {args.cpu})
        with contextlib.suppress(KeyboardInterrupt):
            run_stamped(
                serve("127.0.0.1", args.port, args.first_ms / 1000, args.interval_ms / 1000)
            )
        return
    if args.command == "client":
        client_main(args)
        return
    report: dict = {
        "cores": os.cpu_count(),
        "usable_cores": len(_cores()) or None,
        "python": sys.version.split()[0],
    }
    if args.replay:
        report["replay"] = replay(args)
        args.no_capacity = args.no_accuracy = True
    if not args.no_capacity:
        report["capacity"] = capacity(args)
    if not args.no_accuracy:
        report["accuracy"] = accuracy(args)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


TRANSPORTS = ("tuner", "aiohttp", "aiohttp-json", "httpx", "floor")

if __name__ == "__main__":
    main()
