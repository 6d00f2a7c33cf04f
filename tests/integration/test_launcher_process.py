"""The launcher against real processes: small fake servers written to tmp_path.

Each fake is one stdlib script with switches for the behaviour under test (slow
bind with progress lines, early crash, never healthy, a setsid grandchild that
ignores SIGTERM, a log flood, /dev/shm files and SIGKILL-only). Every test is a
few seconds at most and polls instead of sleeping; the autouse fixture in
tests/conftest.py proves nothing outlives a test.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from tests.fakes import FakeGpuBackend
from tuner.errors import LaunchError
from tuner.launcher import (
    LaunchSpec,
    LoadProgress,
    ProcessIdentity,
    ServerProcess,
    free_port,
    reap_leftover,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

FAKE_SERVER = textwrap.dedent(
    r'''
    """A fake inference server: switches pick the misbehaviour."""
    import argparse, mmap, os, signal, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--bind-after", type=float, default=0.0)
    p.add_argument("--progress", type=int, default=0)
    p.add_argument("--fail-after", type=float, default=None)
    p.add_argument("--never-bind", action="store_true")
    p.add_argument("--ignore-term", action="store_true")
    p.add_argument("--setsid-grandchild", default=None, help="file to write its pid to")
    p.add_argument("--flood-mbps", type=float, default=0.0)
    p.add_argument("--shm", default="", help="comma-separated shared-memory names to create")
    p.add_argument("--shm-dir", default="/dev/shm")
    p.add_argument("--print-env", default="")
    p.add_argument("--workers", type=int, default=0)
    a = p.parse_args()

    def say(text, end="\n"):
        sys.stdout.write(text + end)
        sys.stdout.flush()

    if a.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for name in filter(None, a.print_env.split(",")):
        say(f"ENV {name}={os.environ.get(name, '<unset>')}")
    say(f"AFFINITY {sorted(os.sched_getaffinity(0))}")

    if a.setsid_grandchild:
        if os.fork() == 0:  # child: fork the grandchild, then exit so it re-parents
            if os.fork() == 0:
                os.setsid()
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                with open(a.setsid_grandchild, "w") as f:
                    f.write(str(os.getpid()))
                while True:
                    time.sleep(1)
            os._exit(0)

    workers = []
    for _ in range(a.workers):  # plain workers in our session that die with SIGTERM
        pid = os.fork()
        if pid == 0:
            while True:
                time.sleep(1)
        workers.append(pid)

    keep = []
    for name in filter(None, a.shm.split(",")):
        fd = os.open(os.path.join(a.shm_dir, name), os.O_CREAT | os.O_RDWR, 0o600)
        os.ftruncate(fd, 4096)
        keep.append(mmap.mmap(fd, 4096))
        os.close(fd)

    if a.flood_mbps:
        def flood():
            line = b"DEBUG flood " + b"x" * 100 + b"\n"
            chunk = line * (65536 // len(line))
            per_s = a.flood_mbps * 1e6 / len(chunk)
            while True:
                start = time.monotonic()
                for _ in range(max(1, int(per_s / 20))):
                    os.write(1, chunk)
                time.sleep(max(0.0, 0.05 - (time.monotonic() - start)))
        threading.Thread(target=flood, daemon=True).start()

    started = time.monotonic()
    for i in range(a.progress):
        pct = int(100 * (i + 1) / a.progress)
        say(f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {i + 1}/{a.progress}"
            f" [00:0{i}<00:01,  1.80it/s]")
        time.sleep(a.bind_after / max(a.progress, 1) / 2)
    if a.progress:
        say("(EngineCore pid=1) INFO 11-29 11:10:00 [gpu.py:1] Capturing CUDA graphs: ", end="")
        for i in range(1, 4):
            say(f"\rCapturing CUDA graphs: {33 * i}%|###   | {i}/3 [00:00<00:00, 9.0it/s]", end="")
        say("")

    if a.fail_after is not None:
        time.sleep(a.fail_after)
        say("Traceback (most recent call last):")
        say('  File "fake.py", line 1, in <module>')
        say("(EngineCore pid=7) ERROR 11-29 11:10:00 [core.py:1] ValueError: The output_size "
            "of gate's and up's weight = 192 is not divisible by weight quantization "
            "block_n = 128.")
        say("RuntimeError: Engine core initialization failed. See root cause above.")
        sys.exit(1)

    if a.never_bind:
        while True:
            time.sleep(1)

    remaining = a.bind_after - (time.monotonic() - started)
    if remaining > 0:
        time.sleep(remaining)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            code = 200 if self.path in ("/health", "/v1/models") else 404
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    say(f"INFO Started server process on port {a.port}")
    if not a.ignore_term:
        def on_term(signum, frame):
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            os._exit(0)
        signal.signal(signal.SIGTERM, on_term)
    server.serve_forever()
    '''
)


@pytest.fixture
def fake_server(tmp_path: Path) -> Path:
    path = tmp_path / "fake_server.py"
    path.write_text(FAKE_SERVER)
    return path


def make_spec(fake: Path, tmp_path: Path, *args: str, **overrides: object) -> LaunchSpec:
    port = free_port()
    fields: dict[str, object] = {
        "argv": [sys.executable, str(fake), "--port", str(port), *args],
        "port": port,
        "log_path": tmp_path / "logs" / "server.log",
        "startup_timeout_s": 20.0,
        "stop_timeout_s": 5.0,
        "kill_wait_s": 5.0,
    }
    fields.update(overrides)
    return LaunchSpec(**fields)  # type: ignore[arg-type]


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_for(condition, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


def test_healthy_with_progress_env_and_affinity(
    fake_server: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUNER_TEST_EXPORTED", "from-the-shell")
    cpu = sorted(os.sched_getaffinity(0))[0]
    spec = make_spec(
        fake_server, tmp_path, "--bind-after", "0.8", "--progress", "4", "--workers", "2",
        "--print-env", "TUNER_TEST_EXPORTED,TUNER_TEST_SET",
        env={"TUNER_TEST_SET": "42"}, unset=frozenset({"TUNER_TEST_EXPORTED"}), cpus=[cpu],
    )  # fmt: skip
    seen: list[LoadProgress] = []
    with ServerProcess(spec) as server:
        identity = server.start()
        assert identity.pid == server.pid and identity.pgid == identity.pid
        assert identity.is_alive_same_process()
        seconds = server.wait_healthy(on_progress=seen.append)
        assert 0.5 < seconds < 15
        assert server.is_running()
        assert psutil.Process(server.pid).cpu_affinity() == [cpu]
        tree = [server.pid, *(c.pid for c in psutil.Process(server.pid).children(True))]
    report = server.stop()
    assert report.clean, report.problems
    assert report.exit_code == 0 and report.sigkilled == () and report.survivors == ()
    assert all(gone(pid) for pid in tree)
    assert not identity.is_alive_same_process()
    shards = [p.percent for p in seen if p.phase == "Loading safetensors checkpoint shards"]
    # Each poll reports the newest line, so a busy machine may skip some shards (CI saw
    # [25.0] then the graphs); what is reported never goes back, and the last count is the
    # graphs' 3/3, written 0.4 s before the server binds.
    assert shards and shards == sorted(shards)
    counted = [p for p in seen if p.total is not None]
    assert (
        counted[-1].done == counted[-1].total == 3 and "Capturing CUDA graphs" in counted[-1].line
    )
    log = spec.log_path.read_text()
    assert "ENV TUNER_TEST_EXPORTED=<unset>" in log
    assert "ENV TUNER_TEST_SET=42" in log
    assert f"AFFINITY [{cpu}]" in log
    assert "# tuner: stopped" in log
    assert server.stop() is report  # idempotent


def test_exit_before_healthy_is_reported_at_once(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--fail-after", "0.3")
    with ServerProcess(spec) as server:
        server.start()
        started = time.monotonic()
        with pytest.raises(LaunchError) as caught:
            server.wait_healthy()
        waited = time.monotonic() - started
    error = caught.value
    assert waited < 0.3 + 1.5  # python start + 0.3 s + our detection
    assert error.exit_code == 1
    assert error.reason.startswith("server exited with code 1 before it was healthy: ValueError")
    assert "not divisible" in error.reason
    assert "Traceback" in error.log_tail


def test_never_healthy_times_out(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--never-bind", startup_timeout_s=1.0)
    with ServerProcess(spec) as server:
        server.start()
        with pytest.raises(LaunchError, match=r"not healthy after 1 s"):
            server.wait_healthy()
        assert server.is_running()
    assert not server.is_running()
    assert server.stop().clean


def test_cancel_stops_the_wait(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--never-bind")
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with ServerProcess(spec) as server:
        server.start()
        with pytest.raises(LaunchError, match="cancelled"):
            server.wait_healthy(cancel=cancel)


def test_setsid_grandchild_ignoring_sigterm_is_killed(fake_server: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    spec = make_spec(
        fake_server, tmp_path, "--setsid-grandchild", str(pid_file), stop_timeout_s=1.0
    )
    with ServerProcess(spec, track_interval_s=0.2) as server:
        server.start()
        server.wait_healthy()
        assert wait_for(lambda: pid_file.exists() and pid_file.read_text())
        grandchild = int(pid_file.read_text())
        # Re-parented away from the server and in its own session: not a descendant.
        assert grandchild not in {c.pid for c in psutil.Process(server.pid).children(True)}
        assert os.getsid(grandchild) == grandchild
    report = server.stop()
    assert grandchild in report.sigkilled
    assert gone(grandchild)
    assert not report.clean and "killed" in report.problems[0]


def test_log_flood_does_not_hurt(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--flood-mbps", "40", "--bind-after", "1.0")
    me = psutil.Process()
    rss_before = me.memory_info().rss
    updates: list[LoadProgress] = []
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy(on_progress=updates.append)
        tail = server.log_tail(20)
    report = server.stop()
    assert report.clean, report.problems
    size = spec.log_path.stat().st_size
    assert size > 10e6  # it did flood
    assert len(tail.splitlines()) == 20
    assert me.memory_info().rss - rss_before < 64e6
    assert len(updates) < 100  # throttled to the wait loop, not one per line


def test_shm_left_by_a_sigkill_only_server_is_removed(fake_server: Path, tmp_path: Path) -> None:
    # A directory of its own, not /dev/shm: another test's launch, running beside this one
    # (pytest -n), would rightly take a psm_* file that appeared during it and that nobody
    # uses for one its server left. test_launcher_sim covers /dev/shm itself.
    shm = tmp_path / "shm"
    shm.mkdir()
    before = shm / "psm_test_before"
    before.write_bytes(b"existed before the launch")
    names = ["psm_test_a", "psm_test_b"]
    spec = make_spec(
        fake_server,
        tmp_path,
        "--ignore-term",
        "--shm",
        ",".join(names),
        "--shm-dir",
        str(shm),
        stop_timeout_s=0.5,
    )
    with ServerProcess(spec, shm_dir=shm) as server:
        server.start()
        server.wait_healthy()
        assert all((shm / n).exists() for n in names)
    report = server.stop()
    assert server.pid in report.sigkilled
    assert sorted(report.shm_removed) == sorted(str(shm / n) for n in names)
    assert not any((shm / n).exists() for n in names)
    assert before.exists()
    assert report.exit_code == -signal.SIGKILL


def test_gpu_memory_that_never_comes_back_is_reported(fake_server: Path, tmp_path: Path) -> None:
    gpu = FakeGpuBackend()
    spec = make_spec(fake_server, tmp_path, gpu_release_timeout_s=0.3)
    with ServerProcess(spec, gpu=gpu) as server:
        server.start()
        server.wait_healthy()
        gpu.gpus[1].memory_used_mib = 90_000.0  # the server "allocated", and never frees
    report = server.stop()
    assert report.gpu_memory_ok is False
    assert not report.clean
    assert any("GPU 1 still uses 90000 MiB" in p for p in report.problems)


def test_port_in_use_is_refused(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path)
    first = ServerProcess(spec)
    with first:
        first.start()
        first.wait_healthy()
        with pytest.raises(LaunchError, match="already in use"):
            ServerProcess(replace(spec, log_path=tmp_path / "second.log")).start()


CRASHING_TUNER = textwrap.dedent(
    """
    import json, os, signal, sys
    from tuner.launcher import LaunchSpec, ServerProcess
    spec = LaunchSpec(**json.loads(sys.argv[1]))
    server = ServerProcess(spec)
    identity = server.start()
    server.wait_healthy()
    with open(sys.argv[2], "w") as f:
        json.dump(identity.to_dict(), f)
    mode = sys.argv[3]
    if mode == "kill9":
        os.kill(os.getpid(), signal.SIGKILL)   # tuner crashes: nothing runs
    elif mode == "ctrl-c":
        signal.raise_signal(signal.SIGINT)      # uncaught KeyboardInterrupt: atexit stops it
    elif mode == "sigterm":
        signal.raise_signal(signal.SIGTERM)     # SystemExit from our handler: atexit stops it
    """
)


def run_tuner(tmp_path: Path, spec: LaunchSpec, mode: str) -> ProcessIdentity:
    script = tmp_path / "crashing_tuner.py"
    script.write_text(CRASHING_TUNER)
    out = tmp_path / "identity.json"
    spec_json = json.dumps(
        {"argv": spec.argv, "port": spec.port, "log_path": str(spec.log_path),
         "stop_timeout_s": 2.0}
    )  # fmt: skip
    result = subprocess.run(
        [sys.executable, str(script), spec_json, str(out), mode], timeout=30, cwd=os.getcwd()
    )
    assert result.returncode != 0
    return ProcessIdentity.from_dict(json.loads(out.read_text()))


def test_reap_leftover_after_tuner_was_killed(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--workers", "1")
    identity = run_tuner(tmp_path, spec, "kill9")
    assert identity.is_alive_same_process()  # the server outlived tuner
    workers = [c.pid for c in psutil.Process(identity.pid).children()]
    assert workers
    # Another process at that pid (another start time, no marker) is not ours.
    impostor = replace(identity, create_time=identity.create_time - 100, marker="not-ours")
    assert not reap_leftover(impostor, stop_timeout_s=2)
    assert not gone(identity.pid)
    assert reap_leftover(identity, stop_timeout_s=2)
    assert wait_for(lambda: gone(identity.pid) and all(gone(w) for w in workers))
    assert not reap_leftover(identity, stop_timeout_s=2)  # nothing left


def test_reap_finds_orphaned_workers_by_marker(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--workers", "2")
    identity = run_tuner(tmp_path, spec, "kill9")
    workers = [c.pid for c in psutil.Process(identity.pid).children()]
    os.kill(identity.pid, signal.SIGKILL)  # the leader dies too, its workers do not
    assert wait_for(lambda: gone(identity.pid))
    assert not any(gone(w) for w in workers)
    assert reap_leftover(identity, stop_timeout_s=2)
    assert wait_for(lambda: all(gone(w) for w in workers))


@pytest.mark.parametrize("mode", ["ctrl-c", "sigterm"])
def test_nothing_survives_tuner_interrupted(fake_server: Path, tmp_path: Path, mode: str) -> None:
    spec = make_spec(fake_server, tmp_path, "--workers", "1")
    identity = run_tuner(tmp_path, spec, mode)
    assert not identity.is_alive_same_process()
    assert "# tuner: stopped" in spec.log_path.read_text()


def test_ctrl_c_during_the_wait_then_stop_in_the_handler(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--never-bind", "--workers", "1")
    server = ServerProcess(spec)
    server.start()
    threading.Timer(0.3, _thread.interrupt_main).start()
    try:
        server.wait_healthy()
    except KeyboardInterrupt:
        report = server.stop()  # what the sweep does
    else:  # pragma: no cover
        pytest.fail("no KeyboardInterrupt")
    assert report.clean, report.problems
    assert not server.is_running()


def test_second_ctrl_c_during_stop_kills_at_once(fake_server: Path, tmp_path: Path) -> None:
    spec = make_spec(fake_server, tmp_path, "--ignore-term", stop_timeout_s=30.0)
    server = ServerProcess(spec)
    server.start()
    server.wait_healthy()
    threading.Timer(0.3, _thread.interrupt_main).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        server.stop()  # would wait 30 s for a server that ignores SIGTERM
    assert time.monotonic() - started < 5
    report = server.stop()  # the stop finished before re-raising: its report is kept
    assert report.sigkilled == (server.pid,)
    assert report.gpu_memory_ok is None
    assert gone(server.pid)
