"""The /proc readers and the checked signal, on this process only."""

from __future__ import annotations

import os
import signal

from tuner.launcher.procfs import (
    environ_has,
    is_alive,
    own_lineage,
    parse_stat,
    proc_table,
    read_stat,
    send_signal,
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
    # /proc/PID/environ is the environment the process started with.
    with open(f"/proc/{os.getpid()}/environ", "rb") as f:
        first = f.read().split(b"\0")[0].decode()
    name, _, value = first.partition("=")
    assert environ_has(os.getpid(), name, value)
    assert not environ_has(os.getpid(), name, value + "-other")
    assert not environ_has(os.getpid(), name[:-1] or "x", value)
