"""The whole engine against hand-made SSE servers (aiohttp.web in a thread, 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
from aiohttp import web

from tuner.bench import LiveStats, LoadSpec, discover_model, measure_level, measure_level_async
from tuner.bench.summary import summarize
from tuner.errors import BenchmarkError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ThreadServer:
    """An aiohttp app on 127.0.0.1:0 in its own thread and loop, so sync code can call it."""

    def __init__(self, routes: dict[str, Handler]) -> None:
        self.app = web.Application()
        for path, handler in routes.items():
            method = "GET" if path.endswith("/models") else "POST"
            self.app.router.add_route(method, path, handler)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.peers: list[int] = []
        self.bodies: list[dict] = []

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    async def _start(self) -> int:
        self.runner = web.AppRunner(self.app, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    async def _stop(self) -> None:
        await self.runner.cleanup()
        # Handlers still sleeping (a stalled stream) end here, not at interpreter exit.
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def completion_event(text: str) -> bytes:
    obj = {
        "id": "c",
        "object": "text_completion",
        "model": "m",
        "choices": [{"index": 0, "text": text, "finish_reason": None}],
        "usage": None,
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def chat_event(**delta: str) -> bytes:
    obj = {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def usage_event(prompt: int, completion: int) -> bytes:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n"


async def start_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    return response


def streaming_server(
    *,
    tokens: int = 4,
    gap_s: float = 0.0,
    usage: bool = True,
    done: bool = True,
    writes: Callable[[bytes], list[bytes]] | None = None,
    fail: Callable[[int], str | None] | None = None,
) -> ThreadServer:
    """A completions server; ``writes`` splits the body into writes, ``fail`` breaks requests."""
    counter = {"n": 0}
    server: ThreadServer

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        server.bodies.append(body)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        server.peers.append(peer[1] if peer else -1)
        n = counter["n"]
        counter["n"] += 1
        mode = fail(n) if fail else None
        if mode == "500":
            return web.json_response({"error": "overloaded"}, status=500)
        if mode == "stall":
            await asyncio.sleep(30)
        response = await start_stream(request)
        count = min(tokens, int(body.get("max_tokens", tokens)))
        payload = b"".join(completion_event(f" t{i}") for i in range(count))
        if usage:
            payload += usage_event(7, count)
        if done:
            payload += b"data: [DONE]\n\n"
        pieces = writes(payload) if writes else _event_pieces(payload)
        for i, piece in enumerate(pieces):
            if mode == "reset" and i == 2:
                assert request.transport is not None
                request.transport.abort()  # a crash in the middle of the stream
                return response
            await response.write(piece)
            if gap_s:
                await asyncio.sleep(gap_s)
        await response.write_eof()
        return response

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "test-model"}]})

    server = ThreadServer({"/v1/completions": completions, "/v1/models": models})
    return server


def _event_pieces(payload: bytes) -> list[bytes]:
    return [event + b"\n\n" for event in payload.split(b"\n\n") if event]


def odd_splits(payload: bytes) -> list[bytes]:
    """Cut the SSE bytes at odd places, several events per write and events split in two."""
    sizes = [1, 7, 300, 13, 2, 511, 3]
    out, pos, i = [], 0, 0
    while pos < len(payload):
        out.append(payload[pos : pos + sizes[i % len(sizes)]])
        pos += sizes[i % len(sizes)]
        i += 1
    return out


@pytest.fixture
def basic() -> Iterator[ThreadServer]:
    with streaming_server(tokens=5, gap_s=0.002) as server:
        yield server


def load(**changes: object) -> LoadSpec:
    base = {
        "model": "test-model",
        "concurrency": 2,
        "requests": 6,
        "max_tokens": 5,
        "prompt_tokens": 8,
        "warmup": 1,
        "timeout_s": 10.0,
        "workers": 1,
    }
    base.update(changes)
    return LoadSpec(**base)  # type: ignore[arg-type]


def test_a_level_of_records(basic: ThreadServer) -> None:
    result = measure_level(basic.url, load())
    assert len(result.records) == 6 and result.errors == 0
    assert sorted(r.index for r in result.records) == list(range(6))
    assert len(basic.bodies) == 7  # one warmup request, excluded
    for r in result.records:
        assert r.ok and r.output_tokens == 5 and r.prompt_tokens == 7 and r.chunks == 5
        assert not r.tokens_estimated and len(r.itl_s) == 4
        assert r.ttft_s is not None and r.e2el_s is not None and 0 < r.ttft_s <= r.e2el_s
        assert r.start_s >= 0
    assert result.duration_s >= max(r.start_s + (r.e2el_s or 0) for r in result.records) - 1e-9
    assert result.peak_in_flight == 2 and result.workers == 1
    s = summarize(result)
    assert s.completed == 6 and s.output_throughput > 0 and s.tpot_ms.count == 6


def test_requests_are_what_the_load_says(basic: ThreadServer) -> None:
    measure_level(basic.url, load(requests=2, warmup=0, max_tokens=3, ignore_eos=True))
    body = basic.bodies[0]
    assert body["model"] == "test-model" and body["max_tokens"] == 3 and body["stream"] is True
    assert body["ignore_eos"] is True and body["stream_options"] == {"include_usage": True}
    assert basic.bodies[0]["prompt"] != basic.bodies[1]["prompt"]


def test_connections_open_before_the_window_and_are_reused(basic: ThreadServer) -> None:
    measure_level(basic.url, load(concurrency=3, requests=12, warmup=0))
    # Three streams, three connections, every one used for several requests.
    assert len(set(basic.peers)) == 3


def test_events_split_at_odd_boundaries() -> None:
    with streaming_server(tokens=9, writes=odd_splits) as server:
        result = measure_level(server.url, load(max_tokens=9))
    assert result.errors == 0
    assert all(r.chunks == 9 and r.output_tokens == 9 for r in result.records)


def test_several_events_per_write_and_no_done() -> None:
    with streaming_server(tokens=6, done=False, writes=lambda p: [p]) as server:
        result = measure_level(server.url, load(max_tokens=6))
    assert result.errors == 0
    # All events arrived at once: one first-token time, zero gaps after it.
    assert all(r.chunks == 6 and max(r.itl_s) < 0.05 for r in result.records)


def test_no_usage_counts_one_token_per_chunk_and_says_so() -> None:
    with streaming_server(tokens=4, usage=False) as server:
        result = measure_level(server.url, load(max_tokens=4, prompt_tokens=12))
    assert all(r.tokens_estimated and r.output_tokens == 4 for r in result.records)
    assert all(r.prompt_tokens == 12 for r in result.records)
    assert summarize(result).tokens_estimated


def test_http_500s_are_recorded_per_request() -> None:
    with streaming_server(fail=lambda n: "500" if n in (2, 4) else None) as server:
        result = measure_level(server.url, load(warmup=0))
    assert result.errors == 2
    failed = [r for r in result.records if not r.ok]
    assert all(r.error and r.error.startswith("http 500:") for r in failed)
    s = summarize(result)
    assert s.flagged and s.error_reasons == {"http 500": 2}


def test_a_crash_in_the_middle_of_a_stream() -> None:
    with streaming_server(
        tokens=6, gap_s=0.001, fail=lambda n: "reset" if n == 1 else None
    ) as server:
        result = measure_level(server.url, load(warmup=0, max_tokens=6))
    (failed,) = [r for r in result.records if not r.ok]
    assert failed.error and failed.error.startswith("connection lost")
    assert failed.chunks == 2 and failed.e2el_s is None
    assert result.completed == 5  # the other streams carry on, on other connections


def test_timeouts_are_recorded() -> None:
    with streaming_server(fail=lambda n: "stall" if n == 0 else None) as server:
        result = measure_level(server.url, load(warmup=0, timeout_s=0.3, requests=3))
    errors = [r.error for r in result.records if r.error]
    assert len(errors) == 1 and errors[0].startswith("timeout")
    assert result.duration_s >= 0.3  # the level lasts until its last request gave up


def test_reasoning_and_content_are_counted_apart() -> None:
    async def chat(request: web.Request) -> web.StreamResponse:
        response = await start_stream(request)
        await response.write(chat_event(role="assistant", content=""))
        for i in range(3):
            await response.write(chat_event(reasoning_content=f" r{i}"))
        await response.write(chat_event(reasoning=" r3"))
        for i in range(4):
            await response.write(chat_event(content=f" c{i}"))
        await response.write(usage_event(9, 8) + b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    with ThreadServer({"/v1/chat/completions": chat}) as server:
        result = measure_level(server.url, load(api="chat", warmup=0, requests=2))
    for r in result.records:
        assert r.ok and r.chunks == 8  # the role-only chunk carries no token
        assert len(r.itl_s) == 8 and r.role_chunks == 1  # but it is timed, as in vLLM
        assert (r.output_tokens, r.reasoning_tokens, r.content_tokens) == (8, 4, 4)
    s = summarize(result)
    assert (s.reasoning_tokens, s.content_tokens) == (8, 8)


def test_poisson_arrivals_capped_by_concurrency(basic: ThreadServer) -> None:
    result = measure_level(basic.url, load(rate=200.0, concurrency=2, requests=10, warmup=0))
    starts = sorted(r.start_s for r in result.records)
    assert len(starts) == 10 and result.errors == 0
    assert starts[-1] > starts[0]  # spread out, not all at once
    assert result.peak_in_flight <= 2 and result.rate == 200.0


def test_a_duration_instead_of_a_count() -> None:
    with streaming_server(tokens=3, gap_s=0.005) as server:
        result = measure_level(server.url, load(requests=None, duration_s=0.3, warmup=0))
    assert result.records and result.errors == 0
    assert max(r.start_s for r in result.records) < 0.3
    assert result.duration_s >= 0.3 - 0.05


def test_live_stats_follow_the_level(basic: ThreadServer) -> None:
    live = LiveStats()
    measure_level(basic.url, load(), live=live)
    assert (live.phase, live.completed, live.errors, live.in_flight) == ("done", 6, 0, 0)
    assert live.chunks == 30 and live.output_tokens == 30


def test_the_async_entry_point(basic: ThreadServer) -> None:
    result = asyncio.run(measure_level_async(basic.url, load(requests=3)))
    assert result.completed == 3


def test_every_warmup_failing_is_a_benchmark_error() -> None:
    with (
        streaming_server(fail=lambda n: "500") as server,
        pytest.raises(BenchmarkError, match="warmup"),
    ):
        measure_level(server.url, load(warmup=2))


def test_nothing_listening() -> None:
    with streaming_server() as server:
        url = server.url
    with pytest.raises(BenchmarkError, match="cannot connect"):
        measure_level(url, load(warmup=0))


def test_discover_model(basic: ThreadServer) -> None:
    assert discover_model(basic.url) == "test-model"
    assert discover_model(basic.url + "/v1") == "test-model"


def test_discover_model_errors() -> None:
    async def empty(request: web.Request) -> web.Response:
        return web.json_response({"data": []})

    with ThreadServer({"/v1/models": empty}) as server:
        with pytest.raises(BenchmarkError, match="no model"):
            discover_model(server.url)
        url = server.url
    with pytest.raises(BenchmarkError, match="cannot reach"):
        discover_model(url, timeout_s=2)
