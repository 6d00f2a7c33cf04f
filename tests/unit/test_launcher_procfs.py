"""The /proc readers and the checked signal: on this process, a zombie, a half-exited one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.processes import (
    environ_with,
    main_thread_exited,
    parent_of_a_zombie,
    stat_of,
    wait_until,
)
from tuner.launcher.procfs import (
    environ_has,
    is_alive,
    own_lineage,
    parse_stat,
    proc_table,
    read_stat,
    send_signal,
    zombie_note,
)


def test_parse_stat_with_an_awkward_command_name() -> None:
    fields = " ".join(str(i) for i in range(4, 53))
    line = f"4242 (a b) c)) S {fields}"
    stat = parse_stat(line.replace(" 4 5 6 7", " 17 18 19 20", 1))
    assert stat.pid == 4242 and stat.state == "S"
    assert (stat.ppid, stat.pgrp, stat.session) == (17, 18, 19)
    assert stat.start_ticks == 22


def test_read_stat_of_this_process() -> None:
    stat = read_stat(os.getpid())
    assert stat is not None
    assert stat.ppid == os.getppid() and stat.session == os.getsid(0)
    assert os.getpid() in proc_table()
    assert read_stat(2**31 - 2) is None
    assert is_alive(os.getpid(), stat.start_ticks)
    assert not is_alive(os.getpid(), stat.start_ticks + 1)


def test_signal_only_the_same_process() -> None:
    stat = read_stat(os.getpid())
    assert stat is not None
    assert send_signal(os.getpid(), stat.start_ticks, 0)
    assert not send_signal(os.getpid(), stat.start_ticks - 1, signal.SIGKILL)  # "recycled"
    assert not send_signal(2**31 - 2, 1, signal.SIGKILL)


def test_lineage_and_environ() -> None:
    assert {os.getpid(), os.getppid()} <= own_lineage()
    # /proc/PID/environ is the environment a process started with: a child's, given here
    # (this process's may hold anything: a pytest-xdist worker's first entry is no KEY=VALUE).
    env = environ_with("TUNER_TEST_ENV", "v1")
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env) as child:
        try:
            # Between fork and exec the child still has this process's environment.
            wait_until(lambda: environ_has(child.pid, "TUNER_TEST_ENV", "v1"))
            assert not environ_has(child.pid, "TUNER_TEST_ENV", "v1-other")
            assert not environ_has(child.pid, "TUNER_TEST_EN", "v1")
        finally:
            child.kill()


def test_a_zombie_is_not_running_and_is_named_so() -> None:
    with parent_of_a_zombie() as (parent, zombie):
        stat = stat_of(zombie)
        assert stat.zombie and stat.dead and stat.ppid == parent.pid
        assert not is_alive(zombie, stat.start_ticks)
        assert is_alive(parent.pid, stat_of(parent.pid).start_ticks)  # the parent runs
        assert not stat_of(parent.pid).zombie
        assert zombie_note(stat) == (
            f"pid {zombie} exited, not yet reaped by its parent pid {parent.pid} (zombie)"
        )


def test_a_process_whose_main_thread_exited_still_runs() -> None:
    # /proc shows Z for the exited leader thread; another thread still runs.
    with main_thread_exited(env=environ_with("TUNER_TEST_MARK", "m1")) as proc:
        stat = stat_of(proc.pid)
        assert stat.state == "Z" and stat.threads_running
        assert not stat.dead and not stat.zombie
        assert is_alive(proc.pid, stat.start_ticks)
        assert not proc_table()[proc.pid].dead
        # The leader's environ went with it; a running thread's is read instead.
        assert environ_has(proc.pid, "TUNER_TEST_MARK", "m1")
        assert not environ_has(proc.pid, "TUNER_TEST_MARK", "m2")
