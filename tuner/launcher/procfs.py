"""Small, fast readers of Linux ``/proc``: who is whose child, who is in which session.

The launcher scans every process often (to keep track of a server's tree), so it
reads ``/proc/PID/stat`` directly instead of building a psutil object per process.
A process is named by ``(pid, start_ticks)``: pids are recycled (``pid_max`` may be
32768), the start time in clock ticks since boot is not, so every signal is sent
only after checking both, through a pidfd where the kernel has them.

A zombie (state Z: it has exited, its parent has not reaped it yet) is not running:
it holds nothing but its pid, and signals do nothing to it, so it is never a member
of a launch's tree nor a survivor of a stop; where tuner reports one it says so
(``zombie_note``). /proc shows Z for the leader thread as soon as it exits, even while
other threads of the process still run (``pthread_exit`` in main): such a process is
running, and ``ProcStat.dead`` says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, replace
from pathlib import Path

import psutil

from tuner.secrets import redact_argv

PROC = Path("/proc")
DEAD_STATES = frozenset("ZXx")  # the thread exited: zombie (Z) or being released (X)


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` the launcher uses."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start_ticks: int
    threads_running: bool = False  # the leader thread exited, another thread still runs

    @property
    def dead(self) -> bool:
        """Exited (a zombie, or being released): not running, nothing left to signal."""
        return self.state in DEAD_STATES and not self.threads_running

    @property
    def zombie(self) -> bool:
        """Exited, and its parent has not reaped it yet: harmless, not running."""
        return self.state == "Z" and not self.threads_running


def parse_stat(text: str) -> ProcStat:
    """Parse one ``/proc/PID/stat`` line; the command name may hold spaces and ')'."""
    head, _, rest = text.rpartition(")")
    pid = int(head.split("(", 1)[0])
    fields = rest.split()
    # fields[0] is field 3 of proc(5) (state); starttime is field 22.
    return ProcStat(
        pid=pid,
        state=fields[0],
        ppid=int(fields[1]),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        start_ticks=int(fields[19]),
    )


def read_stat(pid: int) -> ProcStat | None:
    """The stat of one process, or None if it does not exist (any more)."""
    stat = _read_stat_file(PROC / str(pid) / "stat")
    if stat is not None and stat.state in DEAD_STATES and _other_thread_runs(pid):
        stat = replace(stat, threads_running=True)
    return stat


def _read_stat_file(path: Path) -> ProcStat | None:
    try:
        with open(path) as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def _other_thread_runs(pid: int) -> bool:
    # Only called for a process whose leader thread has exited, which is rare: the
    # extra reads cost nothing on the scans of every process.
    try:
        tids = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return False
    for tid in tids:
        if tid != str(pid):
            stat = _read_stat_file(PROC / str(pid) / "task" / tid / "stat")
            if stat is not None and stat.state not in DEAD_STATES:
                return True
    return False


def proc_table() -> dict[int, ProcStat]:
    """The stat of every process in our pid namespace, in one pass over ``/proc``."""
    table: dict[int, ProcStat] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return table
    for name in names:
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                table[stat.pid] = stat
    return table


def is_alive(pid: int, start_ticks: int) -> bool:
    """The process (pid, start_ticks) still runs: it exists and is not a zombie."""
    stat = read_stat(pid)
    return stat is not None and stat.start_ticks == start_ticks and not stat.dead


def zombie_note(stat: ProcStat) -> str:
    """How reports name a zombie, so that it is not mistaken for a running process."""
    return f"pid {stat.pid} exited, not yet reaped by its parent pid {stat.ppid} (zombie)"


def own_lineage() -> frozenset[int]:
    """Our pid and every ancestor's: never signalled, whatever a scan finds."""
    pids = {os.getpid()}
    stat = read_stat(os.getpid())
    while stat is not None and stat.ppid > 0 and stat.ppid not in pids:
        pids.add(stat.ppid)
        stat = read_stat(stat.ppid)
    return frozenset(pids)


def send_signal(pid: int, start_ticks: int, sig: int) -> bool:
    """Signal (pid, start_ticks) if it is still that process; True if the signal went out.

    The pidfd is opened first and the start time checked after, so a pid recycled
    between the check and the signal cannot be hit.
    """
    fd: int | None = None
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except OSError:
        fd = None  # no pidfd support (old kernel, seccomp): fall back to the checked kill
    try:
        stat = read_stat(pid)
        if stat is None or stat.start_ticks != start_ticks:
            return False
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if fd is not None:
            os.close(fd)


def environ_has(pid: int, name: str, value: str) -> bool:
    """The process started with ``name=value`` in its environment."""
    wanted = f"\0{name}={value}\0".encode()
    try:
        with open(PROC / str(pid) / "environ", "rb") as f:
            return wanted in b"\0" + f.read() + b"\0"
    except OSError:
        pass
    # The leader thread exited (its environ is gone with it): ask a thread still running.
    try:
        tids = [tid for tid in os.listdir(PROC / str(pid) / "task") if tid != str(pid)]
    except OSError:
        return False
    for tid in tids:
        try:
            with open(PROC / str(pid) / "task" / tid / "environ", "rb") as f:
                return wanted in b"\0" + f.read() + b"\0"
        except OSError:
            continue
    return False


def describe(pid: int) -> str:
    """``pid N (command line)`` for messages; the command line is cut to 200 characters,
    the values of its secret-looking flags shown as ``***``."""
    try:
        # One line, whatever the arguments hold (python -c scripts have newlines).
        cmdline = " ".join(" ".join(redact_argv(psutil.Process(pid).cmdline())).split())
    except (psutil.Error, OSError):
        cmdline = ""
    if not cmdline:
        stat_name = _comm(pid)
        cmdline = f"[{stat_name}]" if stat_name else "(not visible)"
    if len(cmdline) > 200:
        cmdline = cmdline[:197] + "..."
    return f"pid {pid} ({cmdline})"


def _comm(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""


def paths_in_use(pid: int, prefix: str) -> set[str]:
    """Paths under ``prefix`` that the process has open or mapped (``/proc/PID/fd`` and maps)."""
    found: set[str] = set()
    fd_dir = PROC / str(pid) / "fd"
    with contextlib.suppress(OSError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                target = os.readlink(fd_dir / fd)
                if target.startswith(prefix) and not target.endswith(" (deleted)"):
                    found.add(target)
    with contextlib.suppress(OSError), open(PROC / str(pid) / "maps", errors="replace") as maps:
        for line in maps:
            at = line.find(prefix)
            if at >= 0:
                path = line[at:].rstrip("\n")
                if not path.endswith(" (deleted)"):
                    found.add(path)
    return found


def inodes_in_use(pid: int, prefix: str) -> set[int]:
    """Inodes of files under ``prefix`` the process has open or mapped, deleted names included.

    glibc's ``sem_open`` maps a new semaphore under a temporary name, links it to its real
    name and unlinks the temporary one, so /proc/PID/maps shows ``/dev/shm/sem.XXXXXX
    (deleted)`` for a live ``sem.mp-...`` file: only the inode ties the two together.
    """
    found: set[int] = set()
    fd_dir = PROC / str(pid) / "fd"
    with contextlib.suppress(OSError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                if os.readlink(fd_dir / fd).startswith(prefix):
                    found.add(os.stat(fd_dir / fd).st_ino)
    with contextlib.suppress(OSError), open(PROC / str(pid) / "maps", errors="replace") as maps:
        for line in maps:
            if prefix in line:
                fields = line.split(None, 5)
                if len(fields) >= 5 and fields[4].isdigit():
                    found.add(int(fields[4]))
    return found
