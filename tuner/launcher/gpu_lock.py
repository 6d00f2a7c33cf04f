"""One tuner per GPU: a per-host lock on the GPUs a study's servers will use.

Two ``tuner run`` on one box that share a GPU would measure each other (and one's server
may not even fit beside the other's): the second is refused at once, with the holder
named and the fix (wait, or give the study other GPUs with ``CUDA_VISIBLE_DEVICES``).
The lock is an ``flock`` on one file per GPU (named by its UUID, so that index order does
not matter) in a folder every user of the host shares; the kernel releases it when the
holder dies, so a kill -9 never leaves a stale lock. Without a GPU there is nothing to
share and nothing is locked (the simulator's studies run side by side).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from tuner.errors import TunerError
from tuner.telemetry.gpu import GpuBackend

LOCK_DIR_ENV = "TUNER_LOCK_DIR"
"""Where the lock files live; by default a sticky, world-writable folder under the temp dir."""


class GpusBusyError(TunerError):
    """Another tuner on this host holds a GPU this study would use."""


def default_lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "tuner-gpu-locks")


class GpuLock:
    """Hold the GPUs ``devices`` (NVML indices; None: every GPU) until ``release``."""

    def __init__(
        self,
        gpu: GpuBackend,
        devices: Sequence[int] | None,
        *,
        study: str,
        lock_dir: Path | None = None,
    ) -> None:
        self.gpu = gpu
        self.devices = devices
        self.study = study
        self.lock_dir = lock_dir or default_lock_dir()
        self._held: list[int] = []

    def acquire(self) -> GpuLock:
        """Take every GPU's lock, or none: GpusBusyError names the holder and the fix."""
        if not self.gpu.available:
            return self
        indices = (
            list(self.devices) if self.devices is not None else list(range(self.gpu.device_count()))
        )
        self._make_dir()
        try:
            for index in indices:
                self._take(index)
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        for fd in self._held:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the descriptor drops the flock
        self._held = []

    def __enter__(self) -> GpuLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _make_dir(self) -> None:
        try:
            self.lock_dir.mkdir(parents=True, exist_ok=True)
            # Shared by every user of the host, like /tmp: each may add files, none may
            # remove another's.
            if self.lock_dir.stat().st_uid == os.getuid():
                self.lock_dir.chmod(0o1777)
        except OSError as exc:
            raise GpusBusyError(
                f"cannot create the GPU lock folder {self.lock_dir}: {exc}; "
                f"set {LOCK_DIR_ENV} to a folder every user of this host can write"
            ) from exc

    def _take(self, index: int) -> None:
        uuid = self.gpu.info(index).uuid or f"index-{index}"
        path = self.lock_dir / f"{uuid}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:
            fd = os.open(path, os.O_RDONLY)  # another user's file: flock works read-only
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise GpusBusyError(
                f"GPU {index} ({uuid}) is in use by another tuner on this host ({holder}). "
                "Wait for it to finish, or give this study other GPUs: set "
                "CUDA_VISIBLE_DEVICES in the space's server.env (with "
                "CUDA_DEVICE_ORDER=PCI_BUS_ID)."
            ) from None
        self._held.append(fd)
        _write_holder(fd, self.study)


def _write_holder(fd: int, study: str) -> None:
    """Who holds the lock, for the message the next tuner prints; best effort."""
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "study": study,
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return "holder unknown"
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    return f"pid {info['pid']}, study {info.get('study', '?')}, since {info.get('since', '?')}"
