"""tuner.study.run.workers: who may join a study, and the heartbeat of those who did."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tuner.errors import ConfigError
from tuner.storage import Store
from tuner.study.run.workers import Heartbeat, WorkerSession, worker_alive
from tuner.telemetry.fingerprint import Fingerprint

H200 = Fingerprint(facts={"gpu_count": 8, "gpu_model": "NVIDIA H200", "driver": "570.86.15"})
H100 = Fingerprint(facts={"gpu_count": 8, "gpu_model": "NVIDIA H100", "driver": "570.86.15"})
QUICK = Heartbeat(interval_s=0.3, grace_s=5.0)


def _worker_name(pid: int) -> str:
    import socket

    return f"{socket.gethostname()}:{pid}:{round(psutil.Process(pid).create_time() * 100)}"


def test_a_second_live_worker_on_a_sqlite_study_is_refused_with_postgresql_named(
    tmp_path: Path,
) -> None:
    store = Store(f"sqlite:///{tmp_path}/e.db")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        name = _worker_name(other.pid)
        assert worker_alive(name)
        store.register_worker("s", name, host=name.split(":")[0], fingerprint="x", hardware={})
        with pytest.raises(ConfigError, match=r"SQLite takes one worker.*postgresql\+psycopg"):
            WorkerSession(store, "s", H200, QUICK).join()
    finally:
        other.kill()
        other.wait()
    # Killed (kill -9 leaves its row as it was): the next run is welcome at once.
    with WorkerSession(store, "s", H200, QUICK):
        pass


def test_a_worker_on_other_hardware_is_refused_naming_the_difference(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path}/e.db")
    with WorkerSession(store, "s", H200, QUICK):
        pass
    with pytest.raises(ConfigError) as refused:
        WorkerSession(store, "s", H100, QUICK).join()
    message = str(refused.value)
    assert "gpu_model: 'NVIDIA H100' != 'NVIDIA H200'" in message
    assert "--split-by-host" in message
    assert [w.fingerprint for w in store.workers("s")] == [H200.digest]  # not registered
    with WorkerSession(store, "s", H200, QUICK):  # the same hardware joins again
        pass
    with WorkerSession(store, "other", H100, QUICK):  # another study is another matter
        pass


def test_the_heartbeat_is_renewed_while_working_and_the_exit_recorded(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path}/e.db")
    with WorkerSession(store, "s", H200, QUICK) as session:
        (row,) = store.workers("s")
        assert row.stopped_at is None and row.fingerprint == H200.digest
        assert store.fingerprint == H200.digest  # launches of this process carry it
        first = row.heartbeat_at
        time.sleep(1.6)  # SQLite's CURRENT_TIMESTAMP counts whole seconds
        (row,) = store.workers("s")
        assert row.heartbeat_at > first
        assert row.worker == session.worker
    (row,) = store.workers("s")
    assert row.stopped_at is not None


def test_heartbeat_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUNER_HEARTBEAT_S", "2")
    monkeypatch.delenv("TUNER_HEARTBEAT_GRACE_S", raising=False)
    assert Heartbeat.from_env() == Heartbeat(interval_s=2.0, grace_s=120.0)
    monkeypatch.setenv("TUNER_HEARTBEAT_GRACE_S", "6")
    assert Heartbeat.from_env() == Heartbeat(interval_s=2.0, grace_s=6.0)
    monkeypatch.setenv("TUNER_HEARTBEAT_GRACE_S", "1")
    with pytest.raises(ConfigError, match="must be longer than TUNER_HEARTBEAT_S"):
        Heartbeat.from_env()
    monkeypatch.setenv("TUNER_HEARTBEAT_S", "soon")
    with pytest.raises(ConfigError, match="TUNER_HEARTBEAT_S='soon'"):
        Heartbeat.from_env()
