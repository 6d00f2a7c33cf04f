"""Fixtures shared by every test: no process outlives its test; a temporary working directory.

``no_leftover_processes`` (autouse) gives each test a unique ``TUNER_TEST_ID``
in ``os.environ``, so every process the test starts inherits it, even one that
later re-parents to init or calls ``setsid``. After the test it looks for
processes started during the test (our descendants, and anything carrying the
marker) that still run (a zombie does not: it has exited, only its parent has not
reaped it yet), gives them a short grace period to exit, then kills them and fails
the test. A test that started nothing pays a counter comparison: spawns are counted
by an audit hook (subprocess, fork, posix_spawn, system) and a wrapper around
``_posixsubprocess.fork_exec`` (multiprocessing's spawn start method, which raises
no audit event). Mark a test ``allow_leftover_processes`` to only clean up.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

TEST_ID_ENV = "TUNER_TEST_ID"
GRACE_S = 2.0

_SPAWN_EVENTS = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system",
     "pty.spawn"}
)  # fmt: skip
_spawns = 0
# Helpers multiprocessing starts once and keeps for the whole session, on purpose.
_SESSION_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _count_spawns(event: str, args: tuple[object, ...]) -> None:
    global _spawns
    if event in _SPAWN_EVENTS:
        _spawns += 1


sys.addaudithook(_count_spawns)
_fork_exec = _posixsubprocess.fork_exec


def _counting_fork_exec(*args, **kwargs):  # type: ignore[no-untyped-def]
    global _spawns
    _spawns += 1
    return _fork_exec(*args, **kwargs)


_posixsubprocess.fork_exec = _counting_fork_exec


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "allow_leftover_processes: clean up processes a test leaves behind without failing it",
    )


def _now_in_create_time_clock() -> float:
    # psutil's create_time is boot time (whole seconds) plus ticks since boot, so it
    # can be up to a second off time.time(); compare in its own clock instead.
    with open("/proc/uptime") as f:
        return psutil.boot_time() + float(f.read().split()[0])


def _started_during(marker: str, since: float) -> list[psutil.Process]:
    """Processes started since ``since`` by this test (descendants, or carrying its
    marker) that still run; a zombie (exited, not yet reaped by its parent) is no leftover."""
    # Imported here, not at the top: a test that started nothing never needs it.
    from tuner.launcher.procfs import environ_has, read_stat

    def running(pid: int) -> bool:
        stat = read_stat(pid)
        return stat is not None and not stat.dead

    found: dict[int, psutil.Process] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.create_time() >= since and running(proc.pid):
                found[proc.pid] = proc
        except psutil.Error:
            pass
    for proc in psutil.process_iter(["create_time"]):
        created = proc.info["create_time"]
        if created is None or created < since or proc.pid in found:
            continue
        if environ_has(proc.pid, TEST_ID_ENV, marker) and running(proc.pid):
            found[proc.pid] = proc
    return [proc for proc in found.values() if not _session_helper(proc)]


def _session_helper(proc: psutil.Process) -> bool:
    try:
        cmdline = " ".join(proc.cmdline())
    except psutil.Error:
        return False
    return any(helper in cmdline for helper in _SESSION_HELPERS)


def _describe(proc: psutil.Process) -> str:
    try:
        return f"pid {proc.pid} ({' '.join(proc.cmdline())[:200]})"
    except psutil.Error:
        return f"pid {proc.pid}"


@pytest.fixture(autouse=True)
def no_leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a process it started is still alive after it."""
    marker = uuid.uuid4().hex
    previous = os.environ.get(TEST_ID_ENV)
    os.environ[TEST_ID_ENV] = marker
    spawns_before = _spawns
    since: float | None = None
    with contextlib.suppress(OSError):
        since = _now_in_create_time_clock() - 0.02
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(TEST_ID_ENV, None)
        else:
            os.environ[TEST_ID_ENV] = previous
    if _spawns == spawns_before or since is None:
        return
    deadline = time.monotonic() + GRACE_S
    leftovers = _started_during(marker, since)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.05)
        leftovers = _started_during(marker, since)
    if not leftovers:
        return
    names = ", ".join(_describe(p) for p in leftovers)
    for proc in leftovers:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(leftovers, timeout=5)
    if request.node.get_closest_marker("allow_leftover_processes") is None:
        pytest.fail(
            f"{len(leftovers)} process(es) started by this test outlived it (killed now): {names}",
            pytrace=False,
        )


@pytest.fixture
def tmp_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test inside its own empty directory (tmp_path)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True, scope="session")
def _tuner_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`tuner check` caches servers' --help texts; tests keep theirs out of ~/.cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("TUNER_CACHE_DIR", str(tmp_path_factory.mktemp("tuner-cache")))
    yield
    patch.undo()
