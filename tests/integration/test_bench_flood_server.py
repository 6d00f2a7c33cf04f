"""benchmarks/flood_server.c, the capacity benchmark's C server, streams what it claims.

It must answer like the Python server (every token one SSE event, usage at the end,
keep-alive) and count what it wrote, or the capacity figures measured against it mean
nothing. Skipped where no C compiler is installed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.bench_servers import StreamingServer, capacity_module
from tuner.bench import LoadSpec, measure_level
from tuner.bench.summary import summarize

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(60),
    pytest.mark.skipif(
        not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")),
        reason="no C compiler to build benchmarks/flood_server.c",
    ),
]


@pytest.fixture
def flood_url() -> Iterator[str]:
    binary = capacity_module().flood_server_binary()
    assert binary is not None and binary.exists()
    server = StreamingServer([str(binary), "0"])
    try:
        yield server.url
    finally:
        server.stop()


def test_tuners_client_gets_every_token_the_flood_server_counts(flood_url: str) -> None:
    httpx.post(flood_url + "/truth/reset", timeout=10)
    # Long streams (milliseconds of the server's writes each), so that they overlap: the
    # client opens all 16, but on a busy 2-core machine the first can end before the 16th
    # is sent (64-token streams showed a peak of 8 to 15), so the check asks for most.
    tokens = 4096
    load = LoadSpec(
        model="bench-model",
        prompt_tokens=8,
        max_tokens=tokens,
        concurrency=16,
        requests=48,
        warmup=1,
        workers=1,  # auto would measure a client-limited level again: the truth counts both
    )
    summary = summarize(measure_level(flood_url, load))
    assert summary.completed == 48 and summary.errors == 0
    assert summary.output_tokens == 48 * tokens
    assert not summary.tokens_estimated  # the final usage chunk was there
    truth = httpx.get(flood_url + "/truth", timeout=10).json()
    assert truth["streams"] == 48 + 1  # and the warmup request
    assert truth["tokens"] == 48 * tokens + tokens
    assert truth["peak_open_streams"] >= 12
    assert truth["server_cpu_s"] > 0


def test_chat_streams_and_plain_routes(flood_url: str) -> None:
    with httpx.Client(timeout=10) as client:
        assert client.get(flood_url + "/v1/models").json()["data"][0]["id"] == "bench-model"
        body = {"model": "bench-model", "messages": [], "max_tokens": 3, "stream": True}
        with client.stream("POST", flood_url + "/v1/chat/completions", json=body) as reply:
            text = "".join(reply.iter_text())
        assert reply.headers["transfer-encoding"] == "chunked"
        assert text.count('"delta":{"content":" tok"}') == 3
        assert text.rstrip().endswith("data: [DONE]")
