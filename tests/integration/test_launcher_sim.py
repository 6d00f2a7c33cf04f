"""The launcher against the bundled simulated vLLM server (``python -m tuner.sim``)."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from tuner.errors import LaunchError
from tuner.launcher import LaunchSpec, LoadProgress, ServerProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ORPHAN_MARKER = "tuner-sim-orphan"  # in the leaked worker's command line (tuner/sim/misbehave.py)


def gone(pid: int) -> bool:
    """Exited: no such pid, or a zombie waiting for init to reap it."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def sim_spec(tmp_path: Path, *args: str, **overrides: object) -> LaunchSpec:
    port = free_port()
    fields: dict[str, object] = {
        "argv": [sys.executable, "-m", "tuner.sim", "--port", str(port), *args],
        "port": port,
        "log_path": tmp_path / "server.log",
        "startup_timeout_s": 30.0,
        "stop_timeout_s": 1.0,
        "kill_wait_s": 5.0,
    }
    fields.update(overrides)
    return LaunchSpec(**fields)  # type: ignore[arg-type]


def test_sim_with_a_leaked_worker_a_flood_and_shm(tmp_path: Path) -> None:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    spec = sim_spec(
        tmp_path, "--load-seconds", "1", "--leave-orphan", "--flood-log", "--shm-prefix", prefix
    )
    progress: list[LoadProgress] = []
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy(on_progress=progress.append)
        orphans = [
            p.pid
            for p in psutil.process_iter(["cmdline"])
            if ORPHAN_MARKER in (p.info["cmdline"] or []) and str(server.pid) in p.info["cmdline"]
        ]
        assert len(orphans) == 1
        assert os.getsid(orphans[0]) == orphans[0]  # its own session: a group kill misses it
    report = server.stop()
    assert report.sigkilled == tuple(orphans)  # the leader stopped on SIGTERM, the leak did not
    assert report.exit_code == 0
    assert gone(orphans[0])
    assert not list(Path("/dev/shm").glob(f"{prefix}_sim_*"))
    shards = [p for p in progress if p.total == 64]
    assert shards and shards[-1].percent is not None and shards[-1].percent > 50


def test_sim_refusing_to_start(tmp_path: Path) -> None:
    spec = sim_spec(tmp_path, "--fail-at-start", "cannot allocate the KV cache")
    with ServerProcess(spec) as server:
        server.start()
        with pytest.raises(LaunchError) as caught:
            server.wait_healthy()
    assert caught.value.exit_code == 1
    assert "cannot allocate the KV cache" in caught.value.reason
    assert server.stop().clean
