"""The processes of one launch: find them all, keep finding them, stop them all.

A server is more than its leader. vLLM forks engine and worker processes; when the
leader dies they are re-parented to init, and any of them may call ``setsid``. So
membership is the union of:

- the leader and its descendants (ppid links);
- every process in the leader's session or process group, while the leader's pid
  is reserved (the leader is alive, or a zombie we have not reaped yet), so the
  number cannot belong to someone else;
- every process tracked before (by pid and start time) and its descendants, which
  keeps a setsid'd grandchild whose parent died;
- on a deep scan, every process whose environment carries the launch marker.

Members are running processes. A process of the launch that has exited but is not
yet reaped by its parent (a zombie) is not a member and never a survivor; the tree
keeps it aside (``zombies``) so that a report can say what it is.

Stopping: SIGTERM to the leader (vLLM tears its workers down itself), SIGTERM to
whatever remains once the leader is gone, SIGKILL to whatever is left after the
stop timeout, then wait for the killed ones to disappear.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from tuner.launcher.identity import MARKER_ENV
from tuner.launcher.procfs import (
    ProcStat,
    describe,
    environ_has,
    is_alive,
    own_lineage,
    proc_table,
    read_stat,
    send_signal,
)

POLL_S = 0.05
REFRESH_S = 0.5


@dataclass(frozen=True)
class TerminateResult:
    """What stopping the tree took."""

    sigkilled: tuple[int, ...]
    survivors: tuple[int, ...]
    names: dict[int, str] = field(default_factory=dict)  # pid -> "pid N (cmdline)"
    interrupted: BaseException | None = None


class ProcessTree:
    """The live processes of one launch, refreshed on demand."""

    def __init__(
        self,
        *,
        leader: int | None,
        leader_ticks: int | None,
        session: int | None,
        marker: str = "",
    ) -> None:
        self.leader = leader
        self.leader_ticks = leader_ticks
        self.session = session  # None: do not scan by session/group (pid not reserved)
        self.marker = marker
        self._members: dict[int, int] = {}  # pid -> start ticks
        self._zombies: dict[int, int] = {}  # exited, not yet reaped: pid -> start ticks
        self._lock = threading.Lock()
        self._lineage = own_lineage()

    def members(self) -> dict[int, int]:
        with self._lock:
            return dict(self._members)

    def leader_alive(self) -> bool:
        if self.leader is None or self.leader_ticks is None:
            return False
        return is_alive(self.leader, self.leader_ticks)

    def refresh(self, *, deep: bool = False) -> dict[int, int]:
        """Rescan ``/proc``; the live members (pid -> start ticks) after the scan."""
        table = proc_table()
        with self._lock:
            known = dict(self._members)
            known_zombies = dict(self._zombies)
        roots: set[int] = set()
        for pid, ticks in known.items():
            stat = table.get(pid)
            if stat is not None and stat.start_ticks == ticks:
                roots.add(pid)
        if self.leader is not None and _same(table.get(self.leader), self.leader_ticks):
            roots.add(self.leader)
        if self.session is not None:
            roots.update(
                pid
                for pid, stat in table.items()
                if stat.session == self.session or stat.pgrp == self.session
            )
        if deep and self.marker:
            oldest = self.leader_ticks or 0
            roots.update(
                pid
                for pid, stat in table.items()
                if stat.start_ticks >= oldest
                and not stat.dead
                and pid not in roots
                and environ_has(pid, MARKER_ENV, self.marker)
            )
        found = _with_descendants(roots, table)
        live = {
            pid: table[pid].start_ticks
            for pid in found
            if pid not in self._lineage and not table[pid].dead
        }
        zombies = {pid: table[pid].start_ticks for pid in found if table[pid].zombie}
        zombies.update(
            (pid, ticks)
            for pid, ticks in known_zombies.items()
            if pid in table and table[pid].start_ticks == ticks and table[pid].zombie
        )
        with self._lock:
            # Drop the dead and the recycled; keep the rest and the new ones.
            self._members = live
            self._zombies = zombies
        return dict(live)

    def zombies(self) -> dict[int, ProcStat]:
        """Processes of the launch that exited and wait for their parent to reap them,
        as of the last refresh, re-checked now (no rescan): pid -> stat."""
        with self._lock:
            zombies = dict(self._zombies)
        now = {pid: read_stat(pid) for pid in zombies}
        return {
            pid: stat
            for pid, stat in now.items()
            if stat is not None and stat.start_ticks == zombies[pid] and stat.zombie
        }

    def alive(self) -> dict[int, int]:
        """Members still alive, without a rescan."""
        with self._lock:
            members = dict(self._members)
        return {pid: ticks for pid, ticks in members.items() if is_alive(pid, ticks)}

    def signal(self, members: dict[int, int], sig: int) -> list[int]:
        return [pid for pid, ticks in members.items() if send_signal(pid, ticks, sig)]

    def terminate(self, *, timeout_s: float, kill_wait_s: float) -> TerminateResult:
        """SIGTERM (leader first), wait up to ``timeout_s``, SIGKILL the rest, wait for them.

        An interruption (Ctrl-C, SystemExit) during the graceful wait turns the stop
        into a fast one: everything is killed at once, and the exception is handed
        back in the result for the caller to re-raise once cleanup is done. A last
        scan at the end brings ``zombies`` up to date.
        """
        interrupted: BaseException | None = None
        names: dict[int, str] = {}
        try:
            members = self.refresh(deep=True)
            leader_alive = self.leader is not None and self.leader in members
            if leader_alive:
                assert self.leader is not None and self.leader_ticks is not None
                send_signal(self.leader, self.leader_ticks, signal.SIGTERM)
            else:
                self.signal(members, signal.SIGTERM)
            rest_told = not leader_alive
            deadline = time.monotonic() + timeout_s
            next_refresh = time.monotonic() + REFRESH_S
            while True:
                now = time.monotonic()
                if now >= next_refresh:
                    self.refresh()
                    next_refresh = now + REFRESH_S
                alive = self.alive()
                if not alive:
                    break
                if not rest_told and not self.leader_alive():
                    # The leader is gone but left processes behind: tell them too.
                    self.signal(alive, signal.SIGTERM)
                    rest_told = True
                if now >= deadline:
                    break
                time.sleep(POLL_S)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller after cleanup
            interrupted = exc
        killed: list[int] = []
        survivors: dict[int, int] = {}
        try:
            # Kill in rounds: a process may have forked just before its SIGKILL.
            for _ in range(3):
                left = self.refresh()
                left = {p: t for p, t in left.items() if p not in killed}
                if not left:
                    break
                for pid in left:
                    names.setdefault(pid, describe(pid))
                killed.extend(self.signal(left, signal.SIGKILL))
            deadline = time.monotonic() + kill_wait_s
            while True:
                survivors = self.alive()
                if not survivors or time.monotonic() >= deadline:
                    break
                time.sleep(POLL_S)
            self.refresh()  # the processes that died since the kill rounds: their zombies
        except BaseException as exc:  # noqa: BLE001
            interrupted = interrupted or exc
            survivors = self.alive()
        for pid in survivors:
            names.setdefault(pid, describe(pid))
        return TerminateResult(
            sigkilled=tuple(killed),
            survivors=tuple(sorted(survivors)),
            names=names,
            interrupted=interrupted,
        )


def _same(stat: ProcStat | None, ticks: int | None) -> bool:
    return stat is not None and ticks is not None and stat.start_ticks == ticks and not stat.dead


def _with_descendants(roots: set[int], table: dict[int, ProcStat]) -> set[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for pid, stat in table.items():
        children[stat.ppid].append(pid)
    found: set[int] = set()
    stack = [pid for pid in roots if pid in table]
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        found.add(pid)
        stack.extend(children.get(pid, ()))
    return found
