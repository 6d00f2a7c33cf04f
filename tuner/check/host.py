"""This machine can host the study: a fixed port is free, pinned CPUs exist, the database
is writable."""

from __future__ import annotations

import os

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
    """The study database can be created or opened for writing."""
    from tuner.storage.store import Store  # SQLAlchemy's import is not free; only when checking

    try:
        Store(storage).check_writable()
    except StoreError as exc:
        found.add("error", "storage", str(exc))
        return
    shown = safe_url(storage)
    path = sqlite_file(storage)
    if path is not None and others_can_read(path):
        found.add(
            "warning",
            "storage",
            f"{path} can be read by other users, and it holds the servers' command lines "
            f"and logs: chmod 600 {path} (tuner creates new databases owner-only)",
        )
    found.add("ok", "storage", f"{shown} is writable")
