"""Who a server process is, in a form that survives tuner: pid plus what makes a pid unique.

The identity is written to the study database right after the start. If tuner is
killed, the next run uses it to find a server left behind, and must never stop an
unrelated process that happens to have been given the same (recycled) pid: the
start time and the command line must match too. ``marker`` is a random value put
in the server's environment as ``TUNER_LAUNCH_MARKER``, which every process of the
launch inherits; it still identifies the server when it rewrote its command line
(setproctitle) and finds workers whose leader is already gone.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import psutil

from tuner.launcher.procfs import ProcStat, environ_has, read_stat
from tuner.secrets import redact_argv

MARKER_ENV = "TUNER_LAUNCH_MARKER"
"""Set in the environment of every server tuner starts; its value is the launch id."""

CREATE_TIME_TOLERANCE_S = 0.05
"""psutil derives create_time from clock ticks and the boot time: allow a little jitter."""


@dataclass(frozen=True)
class ProcessIdentity:
    """A started server, as stored with its launch."""

    pid: int
    pgid: int
    create_time: float
    cmdline: tuple[str, ...]
    hostname: str
    marker: str = ""  # the TUNER_LAUNCH_MARKER value; "" when unknown (older records)

    @classmethod
    def capture(
        cls, pid: int, *, marker: str = "", argv: Sequence[str] | None = None
    ) -> ProcessIdentity:
        """Read the identity of a running process (``argv`` fills in a command line
        that cannot be read, e.g. a server that already exited)."""
        proc = psutil.Process(pid)
        create_time = proc.create_time()
        try:
            cmdline = tuple(proc.cmdline())
        except psutil.Error:
            cmdline = ()
        if not cmdline and argv is not None:
            cmdline = tuple(argv)
        try:
            pgid = os.getpgid(pid)
        except OSError:
            pgid = pid  # started with start_new_session: its own group
        return cls(
            pid=pid,
            pgid=pgid,
            create_time=create_time,
            cmdline=cmdline,
            hostname=socket.gethostname(),
            marker=marker,
        )

    def is_alive_same_process(self) -> bool:
        """The pid exists on this host, is not a zombie, and is the process we started."""
        if self.pid <= 0 or self.hostname != socket.gethostname():
            return False
        stat = read_stat(self.pid)
        if stat is None or stat.dead:
            return False
        try:
            proc = psutil.Process(self.pid)
            create_time = proc.create_time()
            cmdline = tuple(proc.cmdline())
        except psutil.Error:
            return False
        marked = bool(self.marker) and environ_has(self.pid, MARKER_ENV, self.marker)
        return identity_matches(self, create_time=create_time, cmdline=cmdline, marked=marked)

    def exited_unreaped(self) -> ProcStat | None:
        """The pid's stat if it is a zombie with our start time: this server exited and
        its parent has not reaped it yet. None otherwise (running, gone, or recycled)."""
        if self.pid <= 0 or self.hostname != socket.gethostname():
            return None
        stat = read_stat(self.pid)
        if stat is None or not stat.zombie:
            return None
        try:
            create_time = psutil.Process(self.pid).create_time()
        except psutil.Error:
            return None
        # A zombie's command line and environment are gone: the start time must do.
        return stat if abs(create_time - self.create_time) <= CREATE_TIME_TOLERANCE_S else None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values, for the launches table."""
        data = asdict(self)
        data["cmdline"] = list(self.cmdline)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProcessIdentity:
        return cls(
            pid=int(data["pid"]),
            pgid=int(data["pgid"]),
            create_time=float(data["create_time"]),
            cmdline=tuple(data.get("cmdline") or ()),
            hostname=str(data["hostname"]),
            marker=str(data.get("marker") or ""),
        )


def identity_matches(
    identity: ProcessIdentity,
    *,
    create_time: float,
    cmdline: Sequence[str],
    marked: bool = False,
) -> bool:
    """The decision, apart from the reading: same start time, and same command line
    or (for a server that rewrote its title) our launch marker in its environment.

    The stored command line has its secret values as ``***`` (tuner/secrets.py): the
    live one matches when it reads the same once redacted."""
    if abs(create_time - identity.create_time) > CREATE_TIME_TOLERANCE_S:
        return False
    live = tuple(cmdline)
    return live == identity.cmdline or tuple(redact_argv(live)) == identity.cmdline or marked
