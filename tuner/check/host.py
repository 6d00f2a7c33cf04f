"""This machine can host the study: a fixed port is free, pinned CPUs exist, the database
is writable."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from tuner.check.report import Findings
from tuner.errors import StoreError
from tuner.launcher import port_in_use
from tuner.secrets import others_can_read, safe_url, sqlite_file
from tuner.space.spec import Space


def check_port(space: Space, found: Findings) -> None:
    """A fixed ``server.port`` must be free now (``auto`` picks one per launch)."""
    server = space.spec.server
    if server.port == "auto":
        found.add("ok", "server.port", "auto: a free port is picked for each launch")
        return
    try:
        busy = port_in_use(server.host, int(server.port))
    except OSError as exc:
        found.add("error", "server.port", f"cannot bind {server.host}:{server.port}: {exc}")
        return
    if busy:
        found.add(
            "error",
            "server.port",
            f"{server.host}:{server.port} is already in use: stop "
            "what listens there, or set server.port: auto",
        )
    else:
        found.add("ok", "server.port", f"{server.host}:{server.port} is free")


def check_cpus(space: Space, found: Findings) -> None:
    """Pinned CPUs must be ones this process may use; server and client should not share."""
    try:
        available = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return
    server = space.spec.server.cpus or []
    client = space.spec.benchmark.cpus or []
    for key, cpus in (("server.cpus", server), ("benchmark.cpus", client)):
        missing = sorted(set(cpus) - available)
        if missing:
            found.add(
                "error",
                key,
                f"CPUs {missing} are not available here (this process may use {sorted(available)})",
            )
    shared = sorted(set(server) & set(client))
    if shared:
        found.add(
            "warning",
            "benchmark.cpus",
            f"CPUs {shared} are in both server.cpus and "
            "benchmark.cpus: the client competes with the server for them",
        )
    elif server or client:
        found.add(
            "ok",
            "server.cpus",
            f"server on CPUs {server or 'any'}, benchmark client on CPUs {client or 'any'}",
        )


def check_storage(storage: str, found: Findings) -> None:
    """The study database can be created, or opened and written; nothing is created here.

    A SQLite file that is not there yet needs a folder tuner may write (`tuner run`
    creates it); one that is there must be a sound study database (not damaged, nobody
    else's tables, a schema this tuner knows) that this process may write and lock.
    """
    path = sqlite_file(storage)
    try:
        if path is not None and not path.exists():
            _check_new_file(path)
            found.add("ok", "storage", f"{path} does not exist yet: `tuner run` creates it")
            return
        _check_existing(storage, path)
    except StoreError as exc:
        found.add("error", "storage", str(exc))
        return
    shown = safe_url(storage)
    if path is not None and others_can_read(path):
        found.add(
            "warning",
            "storage",
            f"{path} can be read by other users, and it holds the servers' command lines "
            f"and logs: chmod 600 {path} (tuner creates new databases owner-only)",
        )
    found.add("ok", "storage", f"{shown} is writable")


def _check_new_file(path: Path) -> None:
    """The folder of a database `tuner run` would create exists and may be written."""
    folder = path.parent
    if not folder.is_dir():
        raise StoreError(
            f"{path}: its folder {folder} does not exist: create it, or pass --storage "
            "with another path"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(
            f"{path}: its folder {folder} is not writable by this user, so the database "
            f"cannot be created there: check its permissions (ls -ld {folder}), or pass "
            "--storage with another path"
        )


def _check_existing(storage: str, path: Path | None) -> None:
    """An existing database: readable, sound, tuner's schema, and writable."""
    from tuner.storage import health
    from tuner.storage.store import Store  # SQLAlchemy's import is not free; only when checking

    if path is None:  # another database (PostgreSQL): it is opened as `tuner run` would
        Store(storage).check_writable()
        return
    health.writable_file(storage)  # not a database, or read-only (even to root)
    store = Store(storage, read_only=True)  # foreign tables, a newer schema
    try:
        health.quick_check(store.engine, storage)
    finally:
        store.engine.dispose()
    _try_write_lock(storage, path)


def _try_write_lock(storage: str, path: Path) -> None:
    """Take SQLite's write lock and let it go (nothing written): a file locked by another
    process, or on a read-only file system, is the one-line error."""
    import sqlite3

    from tuner.storage import health

    uri = f"file:{quote(str(path.absolute()), safe='/')}?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=health.SQLITE_READ_TIMEOUT_S)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.rollback()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise health.database_error(storage, exc) or StoreError(str(exc)) from exc
