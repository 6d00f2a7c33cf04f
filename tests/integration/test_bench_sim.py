"""The engine against ``tuner sim``: the same path the sweep takes, on a simulated vLLM."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tuner.bench import LoadSpec, discover_model, measure_level
from tuner.bench.summary import summarize
from tuner.bench_command import measure_levels

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sim(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    profile = getattr(request, "param", "kimi-k2.5-int4-tp8")
    port = free_port()
    log = (tmp_path / "sim.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tuner.sim",
            "--port",
            str(port),
            "--load-seconds",
            "0.2",
            "--time-scale",
            "0.1",
            "--profile",
            profile,
            "--seed",
            "1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / "sim.log").read_text()
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the sim never became healthy"
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def test_completions_levels_against_the_sim(sim: str) -> None:
    model = discover_model(sim)
    assert model.startswith("sim/")
    loads = [
        LoadSpec(
            model=model,
            concurrency=c,
            requests=2 * c,
            max_tokens=32,
            prompt_tokens=64,
            warmup=1,
            workers=1,
        )
        for c in (1, 8)
    ]
    runs = measure_levels(sim, loads, show=False)
    one, eight = (r.summary for r in runs)
    for s in (one, eight):
        assert s.errors == 0 and s.completed == 2 * s.concurrency
        assert s.output_tokens == 32 * s.completed and not s.tokens_estimated
        assert s.ttft_ms.p50 > 0 and s.tpot_ms.p50 > 0 and s.itl_ms.count > 0
    assert eight.output_throughput > one.output_throughput  # batching pays off
    assert runs[0].result.records[0].prompt_tokens > 0  # from the server's usage


def test_no_window_hits_the_prefix_cache_of_another(sim: str) -> None:
    # Every round and level used to send the same prompts: from the second window on they
    # all hit the prefix cache (on by default, in the sim as in vLLM), and measured a
    # prefill that was never done.
    model = discover_model(sim)
    loads = [
        LoadSpec(model=model, concurrency=c, requests=8, prompt_tokens=64, max_tokens=4, warmup=2)
        for c in (1, 4)
    ]
    runs = measure_levels(sim, loads, rounds=2, show=False)
    assert len(runs) == 4 and all(r.summary.errors == 0 for r in runs)
    metrics = httpx.get(sim + "/metrics", timeout=5).text
    queried = _counter(metrics, "vllm:prefix_cache_queries_total")
    assert queried >= 4 * 8 * 64  # every prompt looked up
    assert _counter(metrics, "vllm:prefix_cache_hits_total") == 0


def _counter(metrics: str, name: str) -> float:
    """A counter's value in a Prometheus text page."""
    lines = [line for line in metrics.splitlines() if line.startswith(name)]
    assert lines, f"{name} not in the page"
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


@pytest.mark.parametrize("sim", ["reasoning"], indirect=True)
def test_chat_reasoning_and_content_counted_apart(sim: str) -> None:
    load = LoadSpec(
        model=discover_model(sim),
        api="chat",
        concurrency=4,
        requests=8,
        max_tokens=64,
        warmup=1,
        workers=1,
    )
    summary = summarize(measure_level(sim, load))
    assert summary.errors == 0
    assert summary.reasoning_tokens > 0 and summary.content_tokens > 0
    assert summary.reasoning_tokens + summary.content_tokens == summary.output_tokens


def test_poisson_rate_against_the_sim(sim: str) -> None:
    load = LoadSpec(
        model=discover_model(sim),
        concurrency=16,
        requests=20,
        rate=50.0,
        max_tokens=16,
        warmup=0,
        workers=1,
    )
    result = measure_level(sim, load)
    assert result.completed == 20 and result.rate == 50.0
    spread = max(r.start_s for r in result.records) - min(r.start_s for r in result.records)
    assert spread > 0.1  # about 20 arrivals at 50/s: some 0.4 s, not all at once
