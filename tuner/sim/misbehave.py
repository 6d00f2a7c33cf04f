"""Deliberate misbehaviour real vLLM deployments show, so the launcher's hygiene can be tested.

- ``--leave-orphan``: a "worker" in its own session that ignores SIGTERM and outlives the
  server, holding the server's stdout/stderr open like a leaked vLLM worker holding a GPU.
- ``--shm-prefix``: a ``/dev/shm`` file that only a clean shutdown removes.
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


def create_shm(prefix: str, pid: int) -> Path | None:
    """Create the shared-memory marker file; None where /dev/shm does not exist."""
    path = shm_path(prefix, pid)
    try:
        path.write_bytes(b"\0" * 4096)
    except OSError:
        return None
    return path


def remove_shm(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


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
