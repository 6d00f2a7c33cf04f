"""HostSampler against real processes: a busy child tree, and a root that has exited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import psutil
import pytest

from tuner.telemetry import HostSampler, summarize_host

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

DEADLINE_S = 20.0

# A parent that starts a sleeping grandchild, then spins (one busy core).
TREE = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "end = time.time() + 60\n"
    "while time.time() < end:\n"
    "    pass\n"
)


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_tree_cpu_and_rss_of_a_busy_child_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", TREE], start_new_session=True)
    descendants: list[int] = []
    sampler = HostSampler(child.pid, interval_s=0.05)
    try:
        sampler.start()
        wait_until(
            lambda: any(
                (s.tree_procs or 0) >= 2 and (s.tree_cpu_pct or 0) > 5 for s in sampler.records()
            ),
            "the busy two-process tree",
        )
        descendants = [p.pid for p in psutil.Process(child.pid).children(recursive=True)]
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    # The tree vanished under the sampler: it keeps going and reports "no tree".
    wait_until(lambda: sampler.records()[-1].tree_procs is None, "the tree to be gone")
    samples = sampler.stop()
    assert sampler.errors == 0
    first = samples[0]
    assert first.host_cpu_pct is None and first.tree_cpu_pct is None  # the baseline reading
    busy = [s for s in samples if (s.tree_procs or 0) >= 2]
    assert all(s.tree_rss_mib and s.tree_rss_mib > 1 for s in busy)
    assert any(s.host_cpu_pct is not None and 0 <= s.host_cpu_pct <= 100 for s in samples)
    summary = summarize_host(samples)
    assert summary.tree_procs_max is not None and summary.tree_procs_max >= 2
    assert summary.tree_cpu_max_pct is not None and summary.tree_cpu_max_pct > 5
    wait_until(lambda: all(gone(pid) for pid in descendants), "the grandchild to be gone")


def test_root_that_already_exited() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=10)
    sampler = HostSampler(child.pid, interval_s=0.02).start()
    wait_until(lambda: len(sampler.records()) >= 3, "three readings")
    samples = sampler.stop()
    assert all(s.tree_procs is None and s.tree_rss_mib is None for s in samples)
    assert sampler.errors == 0


def test_host_only_sampling() -> None:
    sampler = HostSampler(interval_s=0.02).start()
    wait_until(lambda: len(sampler.records()) >= 3, "three readings")
    samples = sampler.stop()
    assert all(s.tree_procs is None for s in samples)
    assert any(s.host_cpu_pct is not None for s in samples[1:])
