"""tuner.study.run.recovery.worker_alive: which workers named in a trial still run."""

from __future__ import annotations

import socket
import subprocess
import sys

import psutil

from tests.processes import parent_of_a_zombie, wait_until
from tuner.study.run.recovery import worker_alive, worker_id


def _name(pid: int) -> str:
    start = round(psutil.Process(pid).create_time() * 100)
    return f"{socket.gethostname()}:{pid}:{start}"


def test_a_running_worker_is_alive_and_a_reused_pid_is_not() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        name = _name(proc.pid)
        assert worker_alive(name)
        host, pid, start = name.rsplit(":", 2)
        # Same pid, another start time: an unrelated process that got the pid later.
        assert not worker_alive(f"{host}:{pid}:{int(start) - 10_000}")
    finally:
        proc.kill()
        proc.wait()
    assert not worker_alive(name)


def test_a_worker_that_exited_but_is_not_reaped_is_not_alive() -> None:
    with parent_of_a_zombie() as (_parent, zombie):
        wait_until(lambda: psutil.Process(zombie).status() == psutil.STATUS_ZOMBIE)
        start = round(psutil.Process(zombie).create_time() * 100)
        assert not worker_alive(f"{socket.gethostname()}:{zombie}:{start}")


def test_this_process_and_malformed_names_never_count() -> None:
    assert not worker_alive(worker_id())  # a resumed run recovers its own trials
    assert not worker_alive("host-without-pid")
    assert not worker_alive("")
