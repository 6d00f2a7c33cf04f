"""scrape_metrics, MetricsSampler and the server version against a real local HTTP server."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from tests.fakes import FakeGpuBackend, vllm_metrics_text
from tuner.telemetry import (
    MetricsSampler,
    collect_inventory,
    metrics_delta,
    scrape_metrics,
    scrape_metrics_async,
)
from tuner.telemetry.gpu import NullGpuBackend
from tuner.telemetry.inventory import server_version

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@dataclass
class FakeVllm:
    """What the fake server serves; tests change it between scrapes."""

    url: str = ""
    preemptions: float = 0
    generation_tokens: float = 0
    kv_usage: float = 0.0
    scrapes: int = 0
    extra: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def fake_vllm() -> Iterator[FakeVllm]:
    state = FakeVllm()

    async def metrics(_: web.Request) -> web.Response:
        state.scrapes += 1
        text = vllm_metrics_text(
            preemptions=state.preemptions,
            generation_tokens=state.generation_tokens,
            kv_usage=state.kv_usage,
            engines=2,
        )
        return web.Response(text=text, content_type="text/plain")

    async def version(_: web.Request) -> web.Response:
        return web.json_response({"version": "0.11.0"})

    async def broken(_: web.Request) -> web.Response:
        return web.Response(status=500, text="boom")

    async def garbage(_: web.Request) -> web.Response:
        return web.Response(text="this is { not prometheus\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/version", version)
    app.router.add_get("/broken/metrics", broken)
    app.router.add_get("/broken/version", broken)
    app.router.add_get("/garbage/metrics", garbage)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-vllm", daemon=True)
    thread.start()
    runner = web.AppRunner(app)

    async def up() -> int:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner.addresses[0][1]

    port = asyncio.run_coroutine_threadsafe(up(), loop).result(timeout=10)
    state.url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_scrape_and_delta_with_preemptions(fake_vllm: FakeVllm) -> None:
    before = scrape_metrics(fake_vllm.url)
    assert before is not None
    assert before["vllm:num_preemptions_total"] == 0
    fake_vllm.preemptions = 3
    fake_vllm.generation_tokens = 4096
    fake_vllm.kv_usage = 0.97
    after = scrape_metrics(fake_vllm.url + "/")  # a trailing slash is fine
    d = metrics_delta(before, after)
    assert d.preemptions == 3
    assert d.generation_tokens == 4096
    assert d.kv_cache_usage_max == pytest.approx(0.97)
    assert d.flag
    assert d.warning == (
        "level had 3 preemptions: its numbers measure memory pressure, not the settings"
    )


def test_scrape_by_series(fake_vllm: FakeVllm) -> None:
    fake_vllm.preemptions = 4
    m = scrape_metrics(fake_vllm.url, by_series=True)
    assert m is not None
    assert m['vllm:num_preemptions_total{engine="0",model_name="fake-model"}'] == 2


def test_scrape_async(fake_vllm: FakeVllm) -> None:
    fake_vllm.generation_tokens = 10
    m = asyncio.run(scrape_metrics_async(fake_vllm.url))
    assert m is not None and m["vllm:generation_tokens_total"] == 10
    assert asyncio.run(scrape_metrics_async(closed_port_url(), timeout_s=2)) is None


def test_unreachable_broken_or_garbled_is_none(fake_vllm: FakeVllm) -> None:
    start = time.monotonic()
    assert scrape_metrics(closed_port_url(), timeout_s=2) is None
    assert scrape_metrics(fake_vllm.url + "/broken") is None
    assert scrape_metrics(fake_vllm.url + "/garbage") is None
    assert scrape_metrics("not a url at all", timeout_s=1) is None
    assert time.monotonic() - start < 10


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_metrics_sampler_catches_the_peak_between_scrapes(fake_vllm: FakeVllm) -> None:
    before = scrape_metrics(fake_vllm.url)
    t0 = time.time()
    sampler = MetricsSampler(fake_vllm.url, interval_s=0.02).start()
    fake_vllm.kv_usage = 0.8
    n = fake_vllm.scrapes
    wait_until(lambda: fake_vllm.scrapes >= n + 2, "scrapes at the peak")
    fake_vllm.kv_usage = 0.0  # the level ends; the server drains
    fake_vllm.generation_tokens = 500
    readings = sampler.stop()
    after = scrape_metrics(fake_vllm.url)
    during = [r.values for r in sampler.window(t0, time.time())]
    assert len(during) == len(readings) >= 2
    d = metrics_delta(before, after, during=during)
    assert d.kv_cache_usage_max == pytest.approx(0.8)
    assert d.generation_tokens == 500
    assert not d.flag


def test_metrics_sampler_against_nothing_keeps_nothing() -> None:
    sampler = MetricsSampler(closed_port_url(), interval_s=0.02, timeout_s=1)
    sampler.start()  # one scrape at start, one at stop: both refused
    assert sampler.stop() == []
    assert sampler.errors == 0  # an unreachable server is an empty reading, not an error


def test_inventory_reads_the_server_version(fake_vllm: FakeVllm) -> None:
    inv = collect_inventory(
        FakeGpuBackend(), base_url=fake_vllm.url, log_text="NCCL version 2.27.3+cuda12.9"
    )
    assert inv.server_version == "0.11.0"
    assert inv.nccl_version == "2.27.3+cuda12.9"
    assert server_version(fake_vllm.url + "/broken") is None


def test_inventory_without_gpu_or_server() -> None:
    inv = collect_inventory(
        NullGpuBackend("NVML not found: GPU telemetry off"), base_url=closed_port_url()
    )
    assert inv.server_version is None
    assert inv.gpu_note == "NVML not found: GPU telemetry off"
    assert inv.hostname
