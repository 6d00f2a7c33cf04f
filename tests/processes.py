"""Real processes in the states the launcher must tell apart, for its tests.

A zombie has exited and waits for its parent to reap it: not running. A process whose
main thread called ``pthread_exit`` while another thread goes on shows state Z in
/proc too, but it runs. Each helper stops and reaps what it started.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tuner.launcher.procfs import ProcStat, read_stat

_PARENT_OF_A_ZOMBIE = """
import os, time
child = os.fork()
if child == 0:
    os._exit(0)
print(child, flush=True)
time.sleep(60)  # never waits for the child: it stays a zombie
"""

_MAIN_THREAD_EXITS = """
import ctypes, os, threading, time
threading.Thread(target=time.sleep, args=(60,)).start()
print(os.getpid(), flush=True)
ctypes.CDLL(None).pthread_exit(None)
"""


def wait_until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll ``condition`` until it holds; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout_s:g} s: {condition}")
        time.sleep(0.01)


def is_zombie(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.zombie


def leader_exited(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.state == "Z"


def stat_of(pid: int) -> ProcStat:
    stat = read_stat(pid)
    assert stat is not None, f"pid {pid} is gone"
    return stat


@contextmanager
def parent_of_a_zombie(**popen_args: object) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A sleeping parent, and the pid of its child that exited and is never reaped."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT_OF_A_ZOMBIE],
        stdout=subprocess.PIPE,
        text=True,
        **popen_args,  # type: ignore[call-overload]
    )
    try:
        assert parent.stdout is not None
        zombie = int(parent.stdout.readline())
        wait_until(lambda: is_zombie(zombie))
        yield parent, zombie
    finally:
        parent.kill()
        parent.wait()


@contextmanager
def main_thread_exited(**popen_args: object) -> Iterator[subprocess.Popen[str]]:
    """A running process whose main thread has exited (state Z in /proc/PID/stat)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN_THREAD_EXITS],
        stdout=subprocess.PIPE,
        text=True,
        **popen_args,  # type: ignore[call-overload]
    )
    try:
        assert proc.stdout is not None
        assert int(proc.stdout.readline()) == proc.pid
        wait_until(lambda: leader_exited(proc.pid))
        yield proc
    finally:
        proc.kill()
        proc.wait()


@contextmanager
def unreaped_child(env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A child of this process that exits at once and stays a zombie until the end."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"], env=env)
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def environ_with(name: str, value: str) -> dict[str, str]:
    return {**os.environ, name: value}
