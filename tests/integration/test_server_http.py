"""Every request tuner makes to the server, against a real local server: no proxy, the key.

``RecordingServer`` (127.0.0.1, a thread) answers /v1/models, /metrics, /version and
/health like vLLM, wants the API key on /v1 when it has one, and records each request's
headers. A dead proxy (127.0.0.1:9) in the environment must change nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fakes import RecordingObserver, vllm_metrics_text
from tests.integration.sweep_helpers import FAST_SIM, write_space
from tuner.bench import discover_model
from tuner.bench.http import Pool, Target
from tuner.errors import BenchmarkError
from tuner.launcher import LaunchSpec, ServerProcess, free_port
from tuner.server_http import url_host
from tuner.space.spec import load_space
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.telemetry import MetricsSampler, scrape_metrics
from tuner.telemetry.gpu import NullGpuBackend
from tuner.telemetry.inventory import server_version
from tuner.trial.monitor import LaunchMonitor

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

DEAD_PROXY = "http://127.0.0.1:9"


class RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, api_key: str | None = None, metrics_status: int = 200, host: str = "127.0.0.1"
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, 0), _Handler)
        self.api_key = api_key
        self.metrics_status = metrics_status
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.port = self.server_address[1]
        self.url = f"http://{url_host(host)}:{self.port}"

    def headers_of(self, path: str) -> list[dict[str, str]]:
        return [headers for seen_path, headers in self.seen if seen_path == path]


class _Handler(BaseHTTPRequestHandler):
    server: RecordingServer

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        srv = self.server
        srv.seen.append((self.path, dict(self.headers.items())))
        status, body = 404, b"not found"
        key_missing = self.headers.get("Authorization") != f"Bearer {srv.api_key}"
        if self.path.startswith("/v1") and srv.api_key is not None and key_missing:
            status, body = 401, b'{"error": "Unauthorized"}'
        elif self.path == "/v1/models":
            status, body = 200, json.dumps({"data": [{"id": "tiny"}]}).encode()
        elif self.path == "/metrics":
            status = srv.metrics_status
            body = vllm_metrics_text(generation_tokens=7).encode() if status == 200 else b"no"
        elif self.path == "/version":
            status, body = 200, b'{"version": "0.11.0"}'
        elif self.path == "/health":
            status, body = 200, b""
        self._answer(status, body)

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        self.server.seen.append((self.path, dict(self.headers.items())))
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(200, b"data: [DONE]\n\n")

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def serve() -> Iterator[type[RecordingServer]]:
    """Call it like RecordingServer(...); every server started is shut down after the test."""
    started: list[RecordingServer] = []

    class Started(RecordingServer):
        def __init__(self, **kwargs: object) -> None:
            super().__init__(**kwargs)  # type: ignore[arg-type]
            threading.Thread(target=self.serve_forever, daemon=True).start()
            started.append(self)

    yield Started
    for srv in started:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, DEAD_PROXY)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_discovery_sends_the_api_key(
    serve: type[RecordingServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = serve(api_key="sk-local")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BenchmarkError, match="HTTP 401.*set OPENAI_API_KEY to the key"):
        discover_model(srv.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    assert discover_model(srv.url) == "tiny"
    # The same setup everywhere: the key goes with the scrape and the version too.
    assert scrape_metrics(srv.url) is not None and server_version(srv.url) == "0.11.0"
    for path in ("/v1/models", "/metrics", "/version"):
        assert srv.headers_of(path)[-1]["Authorization"] == "Bearer sk-local"


@pytest.mark.usefixtures("dead_proxy")
def test_a_proxy_in_the_environment_is_never_used(serve: type[RecordingServer]) -> None:
    srv = serve()
    assert discover_model(srv.url) == "tiny"
    metrics = scrape_metrics(srv.url)
    assert metrics is not None and metrics["vllm:generation_tokens_total"] == 7
    assert server_version(srv.url) == "0.11.0"
    sampler = MetricsSampler(srv.url, interval_s=0.02).start()
    assert sampler.stop(), "the sampler's scrapes reached the server"
    assert sampler.failures.notice() is None


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback (tests/unit covers the head)")
def test_an_ipv6_server_gets_a_bracketed_host_header(serve: type[RecordingServer]) -> None:
    srv = serve(host="::1")
    assert srv.url.startswith("http://[::1]:")
    assert discover_model(srv.url) == "tiny" and scrape_metrics(srv.url) is not None

    async def one_post() -> None:
        pool = Pool(Target.from_url(srv.url))
        try:
            await pool.exchange(Target.from_url(srv.url).post("/v1/completions", b"{}"), 10)
        finally:
            pool.close()

    asyncio.run(one_post())
    for path in ("/v1/models", "/metrics", "/v1/completions"):
        assert srv.headers_of(path)[-1]["Host"] == f"[::1]:{srv.port}", path


def test_a_failing_scrape_is_one_notice_per_launch(serve: type[RecordingServer]) -> None:
    srv = serve(metrics_status=500)
    monitor = LaunchMonitor(NullGpuBackend("no GPU"), server_pid=1, base_url=srv.url)
    monitor.start()
    for _ in range(2):
        monitor.level().finish(output_tokens=0, duration_s=1.0)
    monitor.stop()
    notice = monitor.scrape_notice()
    assert notice is not None and notice.count("cannot scrape") == 1
    assert notice.startswith(f"cannot scrape {srv.url}/metrics: it answered HTTP 500 (")
    assert len(srv.headers_of("/metrics")) >= 6  # two levels of two, and the sampler's


def test_a_sampler_on_its_own_warns_once(
    serve: type[RecordingServer], caplog: pytest.LogCaptureFixture
) -> None:
    srv = serve(metrics_status=404)
    sampler = MetricsSampler(srv.url, interval_s=0.02)
    with caplog.at_level(logging.WARNING, logger="tuner.telemetry.prom"):
        sampler.start()
        sampler.stop()
    [record] = [r for r in caplog.records if "cannot scrape" in r.getMessage()]
    assert record.levelno == logging.WARNING and "HTTP 404" in record.getMessage()


def test_a_sweep_says_once_per_launch_that_metrics_are_missing(tmp_path: Path) -> None:
    space = load_space(write_space(tmp_path, server={"command": [*FAST_SIM, "--no-metrics"]}))
    observer = RecordingObserver()
    run_sweep(
        space,
        RunRequest(f"sqlite:///{tmp_path}/s.db", 2, seed=0, preflight=False),
        Seams(observer=observer, gpu=NullGpuBackend("no GPU")),
    )
    messages = [e[1] for e in observer.events if e[0] == "message" and "/metrics" in e[1]]
    assert [m.split(":")[0] for m in messages] == ["trial 0", "trial 1"], observer.events
    assert all("it answered HTTP 404" in m for m in messages)


@pytest.mark.usefixtures("dead_proxy")
def test_bench_against_a_server_with_an_api_key_needs_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "tuner.sim", "--port", str(port), "--api-key", "sk-sim"]
    spec = LaunchSpec(
        argv=[*argv, "--load-seconds", "0.1", "--time-scale", "0.1"],
        port=port,
        log_path=tmp_path / "sim.log",
        startup_timeout_s=30,
        stop_timeout_s=5,
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy()  # the launcher's probe, past the dead proxy too
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tuner",
                "bench",
                "--url",
                server.url,
                "--concurrency",
                "1",
                "--requests",
                "2",
                "--max-tokens",
                "8",
                "--warmup",
                "0",
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    [level] = json.loads(done.stdout)["levels"]
    assert level["completed"] == 2 and level["errors"] == 0
