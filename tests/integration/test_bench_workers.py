"""Several client processes for one level: one time axis, every request once, none left over."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.bench_servers import StreamingServer
from tuner.bench import LiveStats, LoadSpec, measure_level
from tuner.bench.summary import summarize
from tuner.errors import BenchmarkError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def server_url() -> Iterator[str]:
    server = StreamingServer.python(first_ms=5, interval_ms=2)
    try:
        yield server.url
    finally:
        server.stop()


def test_two_workers_share_one_level(server_url: str) -> None:
    live = LiveStats()
    load = LoadSpec(
        model="bench-model", concurrency=8, requests=40, max_tokens=12, warmup=2, workers=2
    )
    result = measure_level(server_url, load, live=live)
    assert result.workers == 2 and result.errors == 0
    assert sorted(r.index for r in result.records) == list(range(40))
    assert min(r.start_s for r in result.records) < 0.5  # one time axis from one start
    assert result.peak_in_flight == 8
    assert live.completed == 40 and live.output_tokens == 480
    summary = summarize(result)
    assert summary.output_tokens == 480 and summary.ttft_ms.p50 > 4.0


def test_poisson_rate_split_among_workers(server_url: str) -> None:
    load = LoadSpec(
        model="bench-model",
        concurrency=8,
        requests=30,
        max_tokens=4,
        warmup=0,
        rate=100.0,
        workers=2,
    )
    result = measure_level(server_url, load)
    assert result.completed == 30 and result.workers == 2


def test_a_worker_that_cannot_connect_fails_the_level(server_url: str) -> None:
    load = LoadSpec(model="bench-model", concurrency=4, requests=4, warmup=0, workers=2)
    with pytest.raises(BenchmarkError, match="worker"):
        measure_level("http://127.0.0.1:9", load)
