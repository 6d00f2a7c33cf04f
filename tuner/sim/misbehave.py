"""Deliberate misbehaviour real vLLM deployments show, so the launcher's hygiene can be tested.

- ``--leave-orphan``: a "worker" in its own session that ignores SIGTERM and outlives the
  server, holding the server's stdout/stderr open like a leaked vLLM worker holding a GPU.
- ``--shm-prefix``: a ``/dev/shm`` file that only a clean shutdown removes, held open
  while the server runs, as vLLM's and torch's segments are mapped by their processes.
- ``--flood-log``: a continuous stream of log lines; a launcher that stops reading the pipe
  stalls the server, because writes block.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tuner.sim.log import Log

ORPHAN_MARKER = "tuner-sim-orphan"
# Runs with -S (no site): nothing to import, starts in a few milliseconds.
_ORPHAN_CODE = (
    "import signal, time\n"
    "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
    "    signal.signal(s, signal.SIG_IGN)\n"
    "while True:\n"
    "    time.sleep(3600)\n"
)


def spawn_orphan(parent_pid: int) -> int:
    """Start the leaked worker; returns its pid. stdout/stderr are inherited on purpose."""
    proc = subprocess.Popen(
        [sys.executable, "-S", "-c", _ORPHAN_CODE, ORPHAN_MARKER, str(parent_pid)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own session and process group: a group kill misses it
        close_fds=True,
    )
    # Mark it done so Popen neither warns nor reaps it: nobody waits for an escaped worker.
    proc.returncode = 0
    return proc.pid


def shm_path(prefix: str, pid: int) -> Path:
    return Path("/dev/shm") / f"{prefix}_sim_{pid}"


@dataclass(frozen=True)
class ShmMarker:
    """The marker file and the descriptor that keeps it in use until the server exits."""

    path: Path
    fd: int


def create_shm(prefix: str, pid: int) -> ShmMarker | None:
    """Create the shared-memory marker file and keep it open; None where /dev/shm does not exist.

    Held open like a real segment: a launcher's cleanup must leave a live server's file
    alone (another study's server on the same host), and a SIGKILL closes it.
    """
    path = shm_path(prefix, pid)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError:
        return None
    with contextlib.suppress(OSError):
        os.write(fd, b"\0" * 4096)
    return ShmMarker(path, fd)


def remove_shm(marker: ShmMarker | None) -> None:
    if marker is not None:
        with contextlib.suppress(FileNotFoundError):
            marker.path.unlink()
        with contextlib.suppress(OSError):
            os.close(marker.fd)


async def flood_log(log: Log, bytes_per_s: float = 60_000.0, period_s: float = 0.02) -> None:
    """Write ~``bytes_per_s`` of DEBUG lines until cancelled."""
    line_no = 0
    pad = "x" * 60
    while True:
        stamp = time.strftime("%m-%d %H:%M:%S")
        lines = []
        size = 0
        while size < bytes_per_s * period_s:
            text = f"(APIServer pid={log.pid}) DEBUG {stamp} [flood.py:42] line {line_no} {pad}"
            lines.append(text)
            size += len(text) + 1
            line_no += 1
        log.lines(lines)
        await asyncio.sleep(period_s)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists (a zombie counts as gone where /proc says so)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True
