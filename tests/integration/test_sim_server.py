"""The simulated vLLM server as a real subprocess: startup, HTTP API, refusals, shutdown, leaks.

Every test starts ``python -m tuner.sim`` on a free 127.0.0.1 port, polls instead of sleeping
where it can, and the ``start_sim`` fixture proves each process it started is gone at the end
(the ``--leave-orphan`` grandchild is killed by the test that asked for it, by pid).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tuner.launcher.procfs import paths_in_use
from tuner.sim.misbehave import pid_alive, shm_path

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REPO = Path(__file__).resolve().parents[2]
KIMI = "sim/kimi-k2.5-int4-tp8"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@dataclass
class Sim:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_healthy(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"sim exited {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"sim never became healthy:\n{self.log()}")
            time.sleep(0.02)

    def wait_exit(self, timeout: float = 20.0) -> int:
        return self.proc.wait(timeout)

    def config(self) -> dict[str, Any]:
        return httpx.get(self.url + "/sim/config", timeout=5).json()

    def stop(self, timeout: float = 5.0) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds it took)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        return code, time.monotonic() - t0


StartSim = Callable[..., Sim]


@pytest.fixture
def start_sim(tmp_path: Path) -> Iterator[StartSim]:
    started: list[Sim] = []

    def start(
        *args: str,
        env: dict[str, str] | None = None,
        load_seconds: float = 0.2,
        time_scale: float = 0.05,
    ) -> Sim:
        port = free_port()
        log_path = tmp_path / f"sim{len(started)}.log"
        base_env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NCCL_", "VLLM_", "CUDA_DEVICE_MAX"))
        }
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tuner.sim",
                    "--port",
                    str(port),
                    "--load-seconds",
                    str(load_seconds),
                    "--time-scale",
                    str(time_scale),
                    "--seed",
                    "1",
                    *args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**base_env, **(env or {})},
                cwd=REPO,
            )
        sim = Sim(proc, port, log_path)
        started.append(sim)
        return sim

    try:
        yield start
    finally:
        # Tests stop their servers and assert the exit code; this only cleans up after a
        # failed test, then proves nothing we started is still alive.
        for sim in started:
            if sim.proc.poll() is None:
                sim.proc.kill()
                sim.proc.wait(5)
        assert not [s.proc.pid for s in started if pid_alive(s.proc.pid)]


def sse(lines: list[str]) -> list[Any]:
    """Parse SSE ``data:`` lines into JSON objects (and the final "[DONE]")."""
    out: list[Any] = []
    for line in lines:
        if line.startswith("data: "):
            payload = line[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
        else:
            assert line == "", f"unexpected SSE line {line!r}"
    return out


def stream(sim: Sim, path: str, body: dict[str, Any]) -> list[Any]:
    with httpx.stream("POST", sim.url + path, json=body, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return sse(list(r.iter_lines()))


# -- startup ---------------------------------------------------------------------------------
def test_port_refuses_connections_until_the_model_has_loaded(start_sim: StartSim) -> None:
    sim = start_sim(load_seconds=1.5)
    wait_for(lambda: "Loading safetensors checkpoint shards" in sim.log(), 10, "load progress")
    with pytest.raises(httpx.ConnectError):
        httpx.get(sim.url + "/health", timeout=1)
    sim.wait_healthy()
    r = httpx.get(sim.url + "/health")
    assert (r.status_code, r.content) == (200, b"")
    log = sim.log()
    for text in (
        "vLLM API server version 0.0.0-sim",
        "NCCL version 2.31.0+cuda12.9",
        "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",  # Kimi's box: P2P by default
        "Loading safetensors checkpoint shards: 100% Completed | 64/64 [",
        f"INFO:     Started server process [{sim.proc.pid}]",
        "Application startup complete.",
    ):
        assert text in log
    assert log.index("100% Completed") < log.index("Application startup complete.")
    assert sim.stop()[0] == 0


def test_a_dummy_launch_skips_the_weights_and_is_healthy_sooner(start_sim: StartSim) -> None:
    took: dict[str, float] = {}
    logs: dict[str, str] = {}
    for load_format in ("auto", "dummy"):  # one after the other: they share the CPUs
        t0 = time.monotonic()
        sim = start_sim("--load-format", load_format, load_seconds=1.5)
        sim.wait_healthy()
        took[load_format] = time.monotonic() - t0
        logs[load_format] = sim.log()
        cfg = sim.config()
        assert cfg["load_format"] == load_format
        assert (cfg["dummy_throughput_factor"] == 1.0) == (load_format == "auto")
        assert sim.stop()[0] == 0
    # Kimi's weights are 97% of a full launch: the dummy one skips about 1.45 of its 1.5 s.
    assert took["dummy"] < took["auto"] - 0.7, took
    full, dummy = logs["auto"], logs["dummy"]
    assert "Loading safetensors checkpoint shards: 100% Completed | 64/64 [" in full
    assert "Loading weights took " in full
    assert "Skipping validation when loading dummy weights for sim/kimi-k2.5-int4-tp8" in dummy
    assert "Loading safetensors checkpoint shards" not in dummy
    assert "Loading weights took" not in dummy
    for text in ("Model loading took", "torch.compile takes", "Graph capturing finished in"):
        assert text in full and text in dummy
    assert "'load_format': 'dummy'" in dummy


def test_config_shows_the_env_and_flags_the_server_saw(start_sim: StartSim) -> None:
    env = {
        "NCCL_PROTO": "LL",
        "NCCL_ALGO": "allreduce:ring",
        "NCCL_MAX_NCHANNELS": "16",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "VLLM_USE_V1": "1",
    }
    sim = start_sim("-O3", "--max-num-seqs", "64", "--trust-remote-code", env=env)
    sim.wait_healthy()
    cfg = sim.config()
    assert cfg["env"] == env
    assert cfg["argv"][-4:] == ["-O3", "--max-num-seqs", "64", "--trust-remote-code"]
    assert cfg["profile"] == "kimi-k2.5-int4-tp8"
    st = cfg["settings"]
    assert st["compilation_level"] == 3 and st["max_num_seqs"] == 64
    assert st["unknown_args"] == ["--trust-remote-code"]
    assert st["nccl"]["proto"]["default"] == ["ll"]
    assert st["nccl"]["max_nchannels"] == 16
    assert cfg["features"]["allreduce_algo"] == "ring"
    assert 0.97 < cfg["launch_speed_factor"] < 1.03
    assert cfg["seed"] == 1 and cfg["pid"] == sim.proc.pid and cfg["port"] == sim.port
    assert cfg["expected_output_tok_s"]["1"] > 0
    assert "The simulator ignores these arguments: --trust-remote-code" in sim.log()
    assert sim.stop()[0] == 0


def test_noise_flags_reach_the_engine(start_sim: StartSim) -> None:
    sim = start_sim("--launch-noise", "0.02", "--round-noise", "0.01", "--round-steps", "96")
    sim.wait_healthy()
    cfg = sim.config()
    noise, default = cfg["noise"], {"launch_sd": 0.004, "drift_sd": 0.002, "drift_phi": 0.998}
    assert noise["launch_sd"] == pytest.approx(0.02, rel=0.01)
    assert noise["drift_phi"] == pytest.approx(1 - 1 / 6)  # a memory of 96 / 16 steps
    assert noise["drift_sd"] > 0.01  # a fast drift: most of it averages out over a round
    assert cfg["settings"]["round_steps"] == 96
    assert sim.stop()[0] == 0
    plain = start_sim()
    plain.wait_healthy()
    assert {k: plain.config()["noise"][k] for k in default} == default
    assert plain.stop()[0] == 0


def test_the_launch_index_file_counts_starts_and_slows_the_first(
    start_sim: StartSim, tmp_path: Path
) -> None:
    counter = tmp_path / "study" / "sim-launches"
    faults = ("--launch-index-file", str(counter), "--cold-first-launch", "0.05")
    seen = []
    for _ in range(2):
        sim = start_sim(*faults)
        sim.wait_healthy()
        cfg = sim.config()
        seen.append((cfg["launch_index"], cfg["fault_slowdown"]))
        assert f"launch index {cfg['launch_index']} (from {counter})" in sim.log()
        assert sim.stop()[0] == 0
    assert seen == [(0, pytest.approx(1 / 0.95)), (1, 1.0)]
    assert counter.read_text() == "2\n"


# -- the API ---------------------------------------------------------------------------------
def test_streaming_completion_with_usage(start_sim: StartSim) -> None:
    sim = start_sim()
    sim.wait_healthy()
    models = httpx.get(sim.url + "/v1/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == KIMI
    assert httpx.get(sim.url + "/version").json() == {"version": "0.0.0-sim"}
    events = stream(
        sim,
        "/v1/completions",
        {
            "model": KIMI,
            "prompt": "one two three four",
            "max_tokens": 12,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert events[-1] == "[DONE]"
    usage = events[-2]
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 4, "completion_tokens": 12, "total_tokens": 16}
    chunks = events[:-2]
    assert all(c["object"] == "text_completion" and c["model"] == KIMI for c in chunks)
    assert len({c["id"] for c in events[:-1]}) == 1
    text = "".join(c["choices"][0]["text"] for c in chunks)
    assert len(text.split()) == 12
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    # without include_usage: no usage chunk, still [DONE]
    events = stream(
        sim,
        "/v1/completions",
        {"model": KIMI, "prompt": "x", "max_tokens": 3, "ignore_eos": True, "stream": True},
    )
    assert events[-1] == "[DONE]" and all(e == "[DONE]" or e["choices"] for e in events)
    assert sim.stop()[0] == 0


def test_chat_streaming_with_the_reasoning_profile(start_sim: StartSim) -> None:
    sim = start_sim("--profile", "reasoning")
    sim.wait_healthy()
    events = stream(
        sim,
        "/v1/chat/completions",
        {
            "model": "sim/reasoning",
            "messages": [{"role": "user", "content": "why is the sky"}],
            "max_completion_tokens": 20,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert events[-1] == "[DONE]"
    assert events[-2]["usage"]["completion_tokens"] == 20
    chunks = events[:-2]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [c["choices"][0]["delta"] for c in chunks[1:]]
    reasoning = "".join(d.get("reasoning_content", "") for d in deltas).split()
    content = "".join(d.get("content", "") for d in deltas).split()
    assert (len(reasoning), len(content)) == (10, 10)
    first_content = next(i for i, d in enumerate(deltas) if "content" in d)
    assert all("reasoning_content" in d for d in deltas[:first_content])
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert sim.stop()[0] == 0


def test_non_streaming_completion_and_chat(start_sim: StartSim) -> None:
    sim = start_sim()
    sim.wait_healthy()
    r = httpx.post(
        sim.url + "/v1/completions",
        json={"model": KIMI, "prompt": "a b c", "max_tokens": 7, "ignore_eos": True},
        timeout=30,
    )
    body = r.json()
    assert r.status_code == 200 and body["object"] == "text_completion"
    assert len(body["choices"][0]["text"].split()) == 7
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 7, "total_tokens": 10}
    r = httpx.post(
        sim.url + "/v1/chat/completions",
        json={
            "model": KIMI,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 8,
            "ignore_eos": True,
        },
        timeout=30,
    )
    msg = r.json()["choices"][0]["message"]
    assert len(msg["reasoning_content"].split()) == 4 and len(msg["content"].split()) == 4
    # without ignore_eos the "model" may stop early, deterministically per prompt
    lengths = set()
    for _ in range(2):
        r = httpx.post(
            sim.url + "/v1/completions",
            json={"model": KIMI, "prompt": "same prompt", "max_tokens": 5000},
            timeout=60,
        )
        choice = r.json()["choices"][0]
        lengths.add((r.json()["usage"]["completion_tokens"], choice["finish_reason"]))
    ((n, reason),) = lengths
    assert reason == "stop" and 64 <= n <= 2048
    assert sim.stop()[0] == 0


def test_bad_requests_get_vllm_shaped_errors(start_sim: StartSim) -> None:
    sim = start_sim()
    sim.wait_healthy()
    url = sim.url + "/v1/completions"
    r = httpx.post(url, json={"model": KIMI, "prompt": "x", "max_tokens": 0})
    assert r.status_code == 400 and "max_tokens" in r.json()["error"]["message"]
    r = httpx.post(url, json={"model": "nope", "prompt": "x"})
    assert r.status_code == 404 and r.json()["error"]["code"] == 404
    r = httpx.post(url, json={"prompt": "x"})
    assert r.status_code == 400
    r = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400
    r = httpx.post(sim.url + "/v1/chat/completions", json={"model": KIMI, "messages": []})
    assert r.status_code == 400
    assert sim.stop()[0] == 0


@pytest.mark.parametrize("where", ["flag", "env"])
def test_an_api_key_guards_the_v1_routes_and_never_shows(start_sim: StartSim, where: str) -> None:
    key = "sk-sim-" + uuid.uuid4().hex
    sim = start_sim("--api-key", key) if where == "flag" else start_sim(env={"VLLM_API_KEY": key})
    sim.wait_healthy()  # /health needs no key, as in vLLM
    body = {"model": KIMI, "prompt": "hi", "max_tokens": 2}
    assert httpx.get(sim.url + "/v1/models").status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert httpx.post(sim.url + "/v1/completions", json=body, headers=wrong).status_code == 401
    good = {"Authorization": f"Bearer {key}"}
    assert httpx.get(sim.url + "/v1/models", headers=good).status_code == 200
    assert httpx.post(sim.url + "/v1/completions", json=body, headers=good).status_code == 200
    assert httpx.get(sim.url + "/metrics").status_code == 200
    config = sim.config()
    assert key not in json.dumps(config)
    assert config["settings"]["api_key"] == "***"
    assert sim.stop()[0] == 0
    log = sim.log()
    assert key not in log and "'api_key': '***'" in log
    assert '"GET /v1/models HTTP/1.1" 401 Unauthorized' in log


def test_metrics_parse_as_prometheus_text(start_sim: StartSim) -> None:
    sim = start_sim()
    sim.wait_healthy()
    for _ in range(2):
        httpx.post(
            sim.url + "/v1/completions",
            json={
                "model": KIMI,
                "prompt": " ".join(["w"] * 40),
                "max_tokens": 5,
                "ignore_eos": True,
            },
            timeout=30,
        )
    text = httpx.get(sim.url + "/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    value = {name: f.samples[0].value for name, f in families.items()}
    assert value["vllm:num_requests_running"] == 0
    assert value["vllm:num_requests_waiting"] == 0
    assert value["vllm:generation_tokens"] == 10
    assert value["vllm:prompt_tokens"] == 80
    assert value["vllm:prefix_cache_queries"] == 80
    assert value["vllm:prefix_cache_hits"] == 32  # the second prompt hit two 16-token blocks
    assert value["vllm:num_preemptions"] == 0
    assert families["vllm:kv_cache_usage_perc"].samples[0].labels["model_name"] == KIMI
    assert sim.stop()[0] == 0


# -- refusals --------------------------------------------------------------------------------
def test_invalid_nccl_proto_exits_before_serving(start_sim: StartSim) -> None:
    sim = start_sim(env={"NCCL_PROTO": "Foo"})
    assert sim.wait_exit() == 1
    log = sim.log()
    assert 'NCCL WARN Invalid NCCL_PROTO "Foo"' in log
    assert "RuntimeError: NCCL error: invalid argument" in log
    assert "Loading safetensors" not in log  # NCCL fails at init, before the weights load


def test_bare_nccl_algo_fails_at_warmup_after_loading(start_sim: StartSim) -> None:
    sim = start_sim(env={"NCCL_ALGO": "Ring"})
    assert sim.wait_exit() == 1
    log = sim.log()
    assert log.index("100% Completed") < log.index("NCCL WARN") < log.index("RuntimeError")
    assert "Application startup complete." not in log


def test_memory_tight_runs_out_of_memory_after_the_whole_load(start_sim: StartSim) -> None:
    # --max-num-seqs 512: the KV cache is sized, then the first CUDA graph does not fit.
    graphs = start_sim("--profile", "memory-tight", "--max-num-seqs", "512")
    # --max-num-batched-tokens 16384 at 0.8: the profile run leaves too little KV cache.
    kv = start_sim(
        "--profile",
        "memory-tight",
        "--max-num-batched-tokens",
        "16384",
        "--gpu-memory-utilization",
        "0.8",
    )
    assert graphs.wait_exit() == 1 and kv.wait_exit() == 1
    log = graphs.log()
    assert (
        log.index("100% Completed")
        < log.index("Available KV cache memory")
        < log.index("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%")
        < log.index("torch.OutOfMemoryError: CUDA out of memory.")
    )
    log = kv.log()
    assert log.index("Model loading took") < log.index(
        "ValueError: To serve at least one request with the models's max seq len (65536)"
    )
    assert "Capturing CUDA graphs" not in log


def test_minimax_at_tp8_without_expert_parallel_is_refused(start_sim: StartSim) -> None:
    sim = start_sim("--profile", "minimax-m2.5-fp8-tp4", "--tensor-parallel-size", "8")
    assert sim.wait_exit() == 1
    assert (
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
        "weight quantization block_n = 128."
    ) in sim.log()


# -- shutdown and leaks ----------------------------------------------------------------------
def test_sigterm_exits_fast_and_removes_shm(start_sim: StartSim) -> None:
    prefix = f"tuner_test_{uuid.uuid4().hex[:8]}"
    sim = start_sim("--shm-prefix", prefix)
    sim.wait_healthy()
    path = shm_path(prefix, sim.proc.pid)
    assert path.exists() and sim.config()["shm_path"] == str(path)
    # Held open like a real segment: another launch's cleanup sees it in use and leaves it.
    assert str(path) in paths_in_use(sim.proc.pid, "/dev/shm/")
    code, took = sim.stop()
    assert code == 0 and took < 1.0
    assert not path.exists()
    assert "INFO:     Finished server process" in sim.log()


def test_sigterm_during_load_exits_fast(start_sim: StartSim) -> None:
    sim = start_sim(load_seconds=30)
    wait_for(lambda: "Loading safetensors" in sim.log(), 10, "load progress")
    code, took = sim.stop()
    assert code == 0 and took < 1.0


def test_sigterm_with_streams_in_flight(start_sim: StartSim) -> None:
    sim = start_sim(time_scale=1.0)
    sim.wait_healthy()

    async def clients() -> None:
        async with httpx.AsyncClient(timeout=30) as client:

            async def one() -> None:
                body = {
                    "model": KIMI,
                    "prompt": "x",
                    "max_tokens": 5000,
                    "stream": True,
                    "ignore_eos": True,
                }
                try:
                    async with client.stream("POST", sim.url + "/v1/completions", json=body) as r:
                        async for _ in r.aiter_lines():
                            pass
                except httpx.HTTPError:
                    pass  # the server going away mid-stream is the point

            tasks = [asyncio.create_task(one()) for _ in range(8)]
            await asyncio.sleep(0.5)
            code, took = await asyncio.to_thread(sim.stop)
            assert code == 0 and took < 1.0
            await asyncio.wait_for(asyncio.gather(*tasks), 5)

    asyncio.run(clients())


def test_leave_orphan_leaves_a_worker_that_ignores_sigterm(start_sim: StartSim) -> None:
    sim = start_sim("--leave-orphan")
    sim.wait_healthy()
    orphan = sim.config()["orphan_pid"]
    try:
        assert isinstance(orphan, int) and pid_alive(orphan)
        assert f"orphan worker pid {orphan}" in sim.log()
        assert os.getsid(orphan) != os.getsid(sim.proc.pid)  # its own session
        assert os.getpgid(orphan) != os.getpgid(sim.proc.pid)
        os.kill(orphan, signal.SIGTERM)
        time.sleep(0.2)  # give a SIGTERM the chance to (not) work
        assert pid_alive(orphan)
        assert sim.stop()[0] == 0
        assert pid_alive(orphan)  # the server is gone, its worker is not
    finally:
        if pid_alive(orphan):
            os.kill(orphan, signal.SIGKILL)
        wait_for(lambda: not pid_alive(orphan), 5, "the orphan to die")


def test_flood_log_writes_fast_while_serving(start_sim: StartSim) -> None:
    sim = start_sim("--flood-log")
    sim.wait_healthy()
    before = sim.log_path.stat().st_size
    time.sleep(1.0)
    grown = sim.log_path.stat().st_size - before
    assert grown > 20_000
    assert httpx.get(sim.url + "/health").status_code == 200
    assert sim.stop()[0] == 0


# -- speed -----------------------------------------------------------------------------------
def test_throughput_matches_the_model(start_sim: StartSim) -> None:
    """Decode speed (first to last chunk) at time scale 0.1 is the model's, within 10%."""
    sim = start_sim(time_scale=0.1)
    sim.wait_healthy()
    expected = sim.config()["expected_output_tok_s"]

    async def level(client: httpx.AsyncClient, concurrency: int, tokens: int = 200) -> float:
        async def one() -> float:
            body = {
                "model": KIMI,
                "prompt": "p",
                "max_tokens": tokens,
                "stream": True,
                "ignore_eos": True,
            }
            stamps = []
            async with client.stream("POST", sim.url + "/v1/completions", json=body) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: {"):
                        stamps.append(time.perf_counter())
            assert len(stamps) == tokens
            return (tokens - 1) / (stamps[-1] - stamps[0])

        return sum(await asyncio.gather(*[one() for _ in range(concurrency)]))

    async def run() -> dict[int, float]:
        async with httpx.AsyncClient(timeout=30) as client:
            await level(client, 1, tokens=5)  # warm the connection pool
            return {c: await level(client, c) for c in (1, 4)}

    for concurrency, got in asyncio.run(run()).items():
        assert got == pytest.approx(expected[str(concurrency)], rel=0.10)
    assert sim.stop()[0] == 0


def test_hundreds_of_concurrent_streams(start_sim: StartSim) -> None:
    sim = start_sim(time_scale=0.05)
    sim.wait_healthy()

    async def run() -> list[int]:
        # aiohttp rather than httpx: the client must not be the slow side of 260 streams
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def one(i: int) -> int:
                body = {
                    "model": KIMI,
                    "prompt": f"stream {i}",
                    "max_tokens": 16,
                    "stream": True,
                    "ignore_eos": True,
                    "stream_options": {"include_usage": True},
                }
                async with session.post(sim.url + "/v1/completions", json=body) as r:
                    lines = [line.decode().rstrip("\n") async for line in r.content]
                return sse(lines)[-2]["usage"]["completion_tokens"]

            return await asyncio.gather(*[one(i) for i in range(260)])

    assert asyncio.run(run()) == [16] * 260
    text = httpx.get(sim.url + "/metrics").text
    values = {f.name: f.samples[0].value for f in text_string_to_metric_families(text)}
    assert values["vllm:generation_tokens"] == 16 * 260
    assert values["vllm:num_requests_running"] == 0
    assert sim.stop()[0] == 0
