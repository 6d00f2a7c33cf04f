"""The client against a paced server that records its own truth: streams held, TTFT, ITL.

The server is benchmarks/client_capacity.py's (one write per token, 50 ms to the first
token, then 20 ms per token); it reports what it really wrote. The client must either
match that truth (median TTFT within 10%, mean ITL within 1%) or say it was
client-limited: never report a wrong number as the server's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.bench_servers import StreamingServer
from tuner.bench import LoadSpec, discover_model, measure_level
from tuner.bench.summary import summarize

pytestmark = [pytest.mark.integration, pytest.mark.alone, pytest.mark.timeout(120)]


@pytest.fixture
def paced() -> Iterator[StreamingServer]:
    server = StreamingServer.python(first_ms=50, interval_ms=20)
    try:
        yield server
    finally:
        server.stop()


def test_256_streams_held_and_timings_match_the_servers_truth(paced: StreamingServer) -> None:
    model = discover_model(paced.url)
    load = LoadSpec(
        model=model,
        concurrency=256,
        requests=256,
        max_tokens=25,
        warmup=2,
        prompt_tokens=16,
        workers=1,
        timeout_s=60,
    )
    result = measure_level(paced.url, load)
    truth = paced.truth()
    summary = summarize(result)
    assert summary.completed == 256 and summary.errors == 0
    assert result.peak_in_flight == 256 and truth["peak_open_streams"] == 256
    ttft_error = summary.ttft_ms.p50 / truth["ttft_ms_p50"] - 1
    itl_error = summary.itl_ms.mean / truth["itl_ms_mean"] - 1
    detail = (
        f"TTFT p50 {summary.ttft_ms.p50:.2f} vs {truth['ttft_ms_p50']:.2f} ms, "
        f"ITL mean {summary.itl_ms.mean:.3f} vs {truth['itl_ms_mean']:.3f} ms, "
        f"lag p99 {summary.client_lag_ms_p99:.1f} ms"
    )
    if not result.client_limited:
        assert abs(ttft_error) <= 0.10, detail
        assert abs(itl_error) <= 0.01, detail
    else:
        assert result.warnings and "client" in result.warnings[0], detail


def test_output_lengths_are_fixed_and_tpot_excludes_the_first_token(paced: StreamingServer) -> None:
    load = LoadSpec(
        model="bench-model", concurrency=4, requests=8, max_tokens=10, warmup=0, workers=1
    )
    result = measure_level(paced.url, load)
    summary = summarize(result)
    assert summary.output_tokens == 80 and not summary.tokens_estimated
    if not result.client_limited:  # a crowded machine may not keep the pace; it says so
        # 50 ms to the first token is not in TPOT: 9 gaps of 20 ms over 9 tokens.
        assert summary.tpot_ms.p50 == pytest.approx(20.0, rel=0.15)
        assert summary.ttft_ms.p50 == pytest.approx(50.0, rel=0.3)
