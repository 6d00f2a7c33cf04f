"""The autouse fixture's search for leftovers (tests/conftest.py): running ones, not zombies."""

from __future__ import annotations

import subprocess
import sys

import psutil

from tests.conftest import TEST_ID_ENV, _started_during
from tests.processes import environ_with, main_thread_exited, parent_of_a_zombie, wait_until


def _since() -> float:
    with open("/proc/uptime") as f:
        return psutil.boot_time() + float(f.read().split()[0]) - 1.0


def test_a_zombie_is_no_leftover_but_its_running_parent_is() -> None:
    since = _since()
    with parent_of_a_zombie(env=environ_with(TEST_ID_ENV, "marker-a")) as (parent, zombie):
        found = {p.pid for p in _started_during("marker-a", since)}
        assert parent.pid in found and zombie not in found


def test_an_exited_child_not_yet_reaped_is_no_leftover() -> None:
    since = _since()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        wait_until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE)
        assert child.pid not in {p.pid for p in _started_during("marker-b", since)}
    finally:
        child.wait()


def test_a_process_whose_main_thread_exited_is_a_leftover() -> None:
    # /proc says Z for its leader thread, and so does psutil's status(): it runs all the same.
    since = _since()
    with main_thread_exited(env=environ_with(TEST_ID_ENV, "marker-c")) as proc:
        assert proc.pid in {p.pid for p in _started_during("marker-c", since)}
