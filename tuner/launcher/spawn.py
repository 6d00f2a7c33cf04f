"""Starting the server's process: its log file and header, its CPUs, its own session.

The header names the launch, its argv (secret values as ***) and the names of the env it
sets; the server's output is appended after it. A pinned server inherits its CPUs from
the thread that forks it, so no shell and no ``preexec_fn`` (unsafe with threads) is
needed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

import psutil

from tuner.errors import LaunchError
from tuner.launcher.spec import LaunchSpec
from tuner.secrets import redact_argv

TUNER_LINES = ("# tuner:", "# argv:", "# env set:", "# env unset:")
"""How the lines tuner itself writes into the log begin (the header, the stop's footer)."""


def open_log(path: Path) -> BinaryIO:
    """The launch's log, opened to append; a new one is readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    return os.fdopen(fd, "ab")


def log_header(spec: LaunchSpec, marker: str) -> str:
    """The lines written before the server's output: the launch, its argv, its env's names."""
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # The values of secret-looking flags as ***: the log tail goes into the study.
    argv = shlex.join(redact_argv(spec.argv))
    lines = [f"# tuner: launch {marker} at {when}", f"# argv: {argv}"]
    if spec.env:
        # Names only: a fixed server env may hold tokens; the values are in the study.
        lines.append(f"# env set: {' '.join(sorted(spec.env))}")
    if spec.unset:
        lines.append(f"# env unset: {' '.join(sorted(spec.unset))}")
    return "\n".join(lines) + "\n"


def spawn(spec: LaunchSpec, env: dict[str, str], log: BinaryIO) -> subprocess.Popen[bytes]:
    """Start ``spec.argv`` in a new session, its output to ``log``, pinned to ``spec.cpus``;
    a LaunchError that names the program when it cannot start."""
    saved: set[int] | None = None
    if spec.cpus:
        # Affinity without a shell and without preexec_fn (unsafe with threads): a
        # child inherits the mask of the thread that forks it, so pin this thread
        # around the fork only. On Linux, pid 0 here means the calling thread.
        saved = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, spec.cpus)
        except OSError as exc:
            raise LaunchError(
                f"cannot pin the server to CPUs {spec.cpus}: {exc.strerror}; "
                f"this process may use CPUs {sorted(saved)}"
            ) from exc
    try:
        return subprocess.Popen(
            spec.argv,
            env=env,
            cwd=spec.cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    except FileNotFoundError as exc:
        missing = exc.filename or spec.argv[0]
        raise LaunchError(f"cannot start the server: {missing}: no such file") from exc
    except PermissionError as exc:
        raise LaunchError(f"cannot start the server: {spec.argv[0]}: permission denied") from exc
    except OSError as exc:
        raise LaunchError(f"cannot start the server: {exc}") from exc
    finally:
        if saved is not None:
            os.sched_setaffinity(0, saved)


def check_affinity(pid: int, cpus: list[int] | None) -> None:
    """Set the started server's CPUs again where its mask differs from ``cpus``."""
    if not cpus:
        return
    try:
        proc = psutil.Process(pid)
        if set(proc.cpu_affinity() or ()) != set(cpus):
            proc.cpu_affinity(list(cpus))
    except psutil.Error:
        pass  # already gone: wait_healthy will say why
