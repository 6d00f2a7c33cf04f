"""Crash recovery: stop a server that a previous, killed tuner run left running.

The study database holds each launch's ``ProcessIdentity``. A later run hands it
to ``reap_leftover``, which stops the server only if it is provably the same:

- the leader's pid exists, is not a zombie, has the stored start time, and has
  the stored command line (or carries the stored launch marker): then its
  session is ours too, because a live leader keeps its session id reserved;
- or, the leader being gone, processes carry the launch marker in their
  environment (workers orphaned when the leader died).

A recycled pid (same number, other start time, no marker) is never touched. A
leader that exited but is not yet reaped by its parent (a zombie) is not running:
there is nothing to stop, and the log says it is a zombie.
"""

from __future__ import annotations

import logging
import os
import socket

from tuner.launcher.identity import ProcessIdentity
from tuner.launcher.procfs import read_stat, zombie_note
from tuner.launcher.shm import ShmTracker
from tuner.launcher.tree import ProcessTree

logger = logging.getLogger("tuner.launcher")


def reap_leftover(
    identity: ProcessIdentity, *, stop_timeout_s: float, kill_wait_s: float = 10.0
) -> bool:
    """Stop what is left of the launch ``identity``; True if something was stopped."""
    if identity.hostname != socket.gethostname():
        logger.warning(
            "launch pid %d ran on %s, not here (%s): cannot check it",
            identity.pid,
            identity.hostname,
            socket.gethostname(),
        )
        return False
    if identity.is_alive_same_process():
        stat = read_stat(identity.pid)
        if stat is None:
            return False
        in_own_session = _session_of(identity.pid) == identity.pid
        tree = ProcessTree(
            leader=identity.pid,
            leader_ticks=stat.start_ticks,
            session=identity.pid if in_own_session else None,
            marker=identity.marker,
        )
    else:
        _log_if_zombie(identity)
        if not identity.marker:
            return False
        tree = ProcessTree(leader=None, leader_ticks=None, session=None,
                           marker=identity.marker)  # fmt: skip
    members = tree.refresh(deep=True)
    if not members:
        return False
    # From here on, membership grows only by descendants of what was found: once the
    # leader dies, its session number could in principle be handed out again.
    tree.session = None
    shm = ShmTracker()  # no snapshot: only files the processes had open are removed
    shm.observe(members)
    logger.warning(
        "stopping %d process(es) left by a previous run (leader pid %d)",
        len(members),
        identity.pid,
    )
    result = tree.terminate(timeout_s=stop_timeout_s, kill_wait_s=kill_wait_s)
    removed, _ = shm.cleanup()
    if result.survivors:
        logger.warning("still alive after SIGKILL: %s", sorted(result.survivors))
    for stat in tree.zombies().values():
        logger.info("%s: not running", zombie_note(stat))
    if removed:
        logger.info("removed leftover shared memory: %s", ", ".join(removed))
    if result.interrupted is not None:
        raise result.interrupted
    return True


def _log_if_zombie(identity: ProcessIdentity) -> None:
    stat = identity.exited_unreaped()
    if stat is not None:
        logger.info("leader %s: not running", zombie_note(stat))


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None
