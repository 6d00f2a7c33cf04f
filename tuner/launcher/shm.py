"""Shared memory a server leaves in ``/dev/shm`` when it is killed, and removing it.

vLLM and torch keep message queues and tensors in ``/dev/shm`` (``psm_*``,
``sem.mp-*``, NCCL's ``nccl-*``); a clean shutdown unlinks them, a SIGKILL does not,
and the leftovers fill the tmpfs trial after trial. A file is removed only if:

- it did not exist before the launch (same name and inode), and
- it belongs to our uid and is a plain file, and
- the launch's processes had it open or mapped while they ran, or its name
  matches a known pattern and it appeared after the launch started, and
- no live process has it open or mapped now.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from tuner.launcher.procfs import inodes_in_use, paths_in_use, proc_table

SHM_DIR = Path("/dev/shm")
SHM_PATTERNS: tuple[str, ...] = ("psm_*", "sem.mp-*", "vllm_*", "*_sim_*", "nccl-*")


class ShmTracker:
    """Remembers ``/dev/shm`` before a launch and what the launch used; cleans up after it."""

    def __init__(self, shm_dir: Path = SHM_DIR, patterns: Iterable[str] = SHM_PATTERNS) -> None:
        self.shm_dir = Path(shm_dir)
        self.patterns = tuple(patterns)
        self._before: dict[str, int] | None = None
        self._seen: set[str] = set()

    def snapshot(self) -> None:
        """Record what exists now; nothing recorded here is ever removed."""
        self._before = self._listing()

    def observe(self, pids: Iterable[int]) -> None:
        """Note the files under the directory that these processes have open or mapped."""
        prefix = str(self.shm_dir) + "/"
        for pid in pids:
            for path in paths_in_use(pid, prefix):
                name = path[len(prefix) :]
                if "/" not in name:
                    self._seen.add(name)

    @property
    def seen(self) -> frozenset[str]:
        return frozenset(self._seen)

    def candidates(self) -> list[str]:
        """Names the launch left behind, before the in-use check."""
        uid = os.geteuid()
        names = []
        for name, inode in self._listing().items():
            if self._before is not None and self._before.get(name) == inode:
                continue
            try:
                st = os.lstat(self.shm_dir / name)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
                continue
            # A known pattern counts only with a snapshot: without one, any file
            # could have been there before the launch.
            known = self._before is not None and any(
                fnmatch.fnmatchcase(name, p) for p in self.patterns
            )
            if name in self._seen or known:
                names.append(name)
        return sorted(names)

    def cleanup(self) -> tuple[list[str], list[str]]:
        """Remove the leftovers; (removed paths, problem sentences)."""
        names = self.candidates()
        if not names:
            return [], []
        in_use, inodes = _in_use_anywhere(str(self.shm_dir) + "/")
        listing = self._listing()
        removed: list[str] = []
        problems: list[str] = []
        for name in names:
            path = self.shm_dir / name
            if str(path) in in_use or listing.get(name) in inodes:
                continue  # someone still uses it: not ours to take away
            try:
                path.unlink()
                removed.append(str(path))
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems.append(f"could not remove {path}: {exc.strerror}")
        return removed, problems

    def _listing(self) -> dict[str, int]:
        listing: dict[str, int] = {}
        with contextlib.suppress(OSError), os.scandir(self.shm_dir) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    listing[entry.name] = entry.inode()
        return listing


def _in_use_anywhere(prefix: str) -> tuple[set[str], set[int]]:
    """Paths and inodes under ``prefix`` that any process has open or mapped."""
    used: set[str] = set()
    inodes: set[int] = set()
    for pid in proc_table():
        used |= paths_in_use(pid, prefix)
        inodes |= inodes_in_use(pid, prefix)
    return used, inodes
