"""Teardown and StopReport on real processes: a zombie left behind is a note, not a problem."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.processes import environ_with, is_zombie, stat_of, unreaped_child, wait_until
from tuner.launcher.identity import MARKER_ENV
from tuner.launcher.shm import ShmTracker
from tuner.launcher.spec import LaunchSpec
from tuner.launcher.teardown import NOTHING_TO_STOP, StopReport, Teardown, peek_exit_code
from tuner.launcher.tree import ProcessTree


def test_a_zombie_of_the_launch_is_reported_as_such_and_the_stop_stays_clean(
    tmp_path: Path,
) -> None:
    marker = uuid.uuid4().hex
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    leader = subprocess.Popen(argv, start_new_session=True)
    try:
        # A process of the launch (it carries the marker) whose parent is not in the
        # tree and does not reap it: here, this test process.
        with unreaped_child(env=environ_with(MARKER_ENV, marker)) as child:
            tree = ProcessTree(
                leader=leader.pid,
                leader_ticks=stat_of(leader.pid).start_ticks,
                session=leader.pid,
                marker=marker,
            )
            assert child.pid in tree.refresh(deep=True)
            wait_until(lambda: is_zombie(child.pid))
            assert peek_exit_code(leader) is None
            spec = LaunchSpec(argv=argv, port=1, log_path=tmp_path / "server.log",
                              stop_timeout_s=5, kill_wait_s=5)  # fmt: skip
            teardown = Teardown(spec, popen=leader, tree=tree, shm=ShmTracker(tmp_path),
                                gpu=None, gpu_baseline={}, marker=marker)  # fmt: skip
            report, pending = teardown.run(started=time.monotonic(), pending=None)
    finally:
        leader.kill()
        leader.wait()
    assert pending is None
    assert report.clean and report.problems == ()
    assert report.survivors == () and report.sigkilled == ()
    assert report.exit_code == -15  # the leader was reaped: it is no zombie of ours
    note = f"pid {child.pid} exited, not yet reaped by its parent pid {os.getpid()} (zombie)"
    assert report.zombies == (child.pid,) and report.notes == (note,)
    assert report.summary() == f"stopped in {report.seconds:.1f} s (exit code -15): clean; {note}"


def test_summary_lists_problems_then_notes() -> None:
    report = StopReport(
        clean=False, exit_code=None, sigkilled=(7,), survivors=(), shm_removed=(),
        gpu_memory_ok=None, seconds=1.25, problems=("1 process(es) killed",),
        zombies=(9,), notes=("pid 9 exited, not yet reaped by its parent pid 1 (zombie)",),
    )  # fmt: skip
    assert report.summary() == (
        "stopped in 1.2 s: 1 process(es) killed; "
        "pid 9 exited, not yet reaped by its parent pid 1 (zombie)"
    )
    assert NOTHING_TO_STOP.summary() == "stopped in 0.0 s: clean"
