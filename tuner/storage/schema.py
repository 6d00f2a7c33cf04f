"""The tuner_* tables' schema version: create them, upgrade an older database, refuse a newer one.

``tuner_meta.schema_version`` says which layout of tuner's tables a database holds.
``prepare`` runs whenever a ``Store`` opens a database:

- the version is current: nothing to do (one SELECT; the common case);
- no tuner tables yet: create them all at the current version;
- an older version (1 = the tables before ``tuner_meta`` existed): apply each migration
  in turn, every step idempotent (it checks before it alters), then record the version;
- a newer version than this tuner knows: refuse with the fix (upgrade tuner), before
  anything is written.

Several workers starting at once on one PostgreSQL serialise on an advisory lock held
for the transaction, so exactly one creates or migrates and the others find the work
done; DDL is transactional there, so a worker killed halfway leaves nothing half-made.
SQLite has a single writer; a race to create a table there is retried.
optuna's own tables are optuna's (its RDB storage versions them itself).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, insert, inspect, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError, SQLAlchemyError

from tuner.errors import StoreError
from tuner.secrets import safe_url, scrub_url
from tuner.storage import health
from tuner.storage.tables import Base, MetaRow

SCHEMA_VERSION = 4
"""The layout this tuner writes. 1: studies, launches, levels, requests, samples.
2: + tuner_meta, tuner_claims, tuner_workers, tuner_launches.fingerprint.
3: + tuner_launches.capacity (the capacity search per round), tuner_levels.capacity_search."""
VERSION_KEY = "schema_version"
ADVISORY_LOCK_KEY = 0x74756E6572  # "tuner": one lock id for every tuner on the server


def stored_version(conn: Connection) -> int | None:
    """The version recorded in the database; None when it has no ``tuner_meta`` (yet)."""
    if not inspect(conn).has_table(MetaRow.__tablename__):
        return None
    value = conn.execute(select(MetaRow.value).where(MetaRow.key == VERSION_KEY)).scalar()
    return int(value) if value is not None else None


def _add_launch_fingerprint(conn: Connection) -> None:
    """1 -> 2: the hardware fingerprint of each launch (older launches keep NULL)."""
    columns = {c["name"] for c in inspect(conn).get_columns("tuner_launches")}
    if "fingerprint" not in columns:
        conn.execute(text("ALTER TABLE tuner_launches ADD COLUMN fingerprint VARCHAR(32)"))
    indexes = {i["name"] for i in inspect(conn).get_indexes("tuner_launches")}
    if "ix_tuner_launches_fingerprint" not in indexes:
        conn.execute(
            text("CREATE INDEX ix_tuner_launches_fingerprint ON tuner_launches (fingerprint)")
        )


def _add_capacity_columns(conn: Connection) -> None:
    """2 -> 3: each launch's capacity searches, and which levels they measured (older rows
    keep NULL: no search, fixed levels)."""
    launches = {c["name"] for c in inspect(conn).get_columns("tuner_launches")}
    if "capacity" not in launches:
        conn.execute(text("ALTER TABLE tuner_launches ADD COLUMN capacity JSON"))
    levels = {c["name"] for c in inspect(conn).get_columns("tuner_levels")}
    if "capacity_search" not in levels:
        conn.execute(text("ALTER TABLE tuner_levels ADD COLUMN capacity_search BOOLEAN"))


def _add_fidelity_columns(conn: Connection) -> None:
    """3 -> 4: each launch's fidelity (screening or full) and the phases of its load (older
    rows keep NULL: full launches, phases not read)."""
    launches = {c["name"] for c in inspect(conn).get_columns("tuner_launches")}
    if "fidelity" not in launches:
        conn.execute(text("ALTER TABLE tuner_launches ADD COLUMN fidelity VARCHAR(16)"))
    if "load_phases" not in launches:
        conn.execute(text("ALTER TABLE tuner_launches ADD COLUMN load_phases JSON"))


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _add_launch_fingerprint,
    2: _add_capacity_columns,
    3: _add_fidelity_columns,
}
"""From version N to N + 1. The new tables of a version come from ``create_all``."""


def prepare(engine: Engine, url: str, *, attempts: int = 5) -> int:
    """Bring tuner's tables to SCHEMA_VERSION (see the module docstring).

    Returns the version the database was at: 0 for a new one, 1 for tables made before
    versions were recorded.
    """
    for attempt in range(attempts):
        try:
            with engine.connect() as conn:
                found = stored_version(conn)
            refuse_newer(found, url)
            if found == SCHEMA_VERSION:
                return found
            with engine.begin() as conn:
                if conn.dialect.name == "postgresql":
                    conn.execute(select(text(f"pg_advisory_xact_lock({ADVISORY_LOCK_KEY})")))
                return _create_or_upgrade(conn, url)
        except (IntegrityError, OperationalError, ProgrammingError) as exc:
            # SQLite without a lock: another worker created a table or the version row first.
            if attempt + 1 == attempts or not lost_a_race(exc):
                raise _cannot_prepare(url, exc) from exc
            time.sleep(0.2 * (attempt + 1))
        except SQLAlchemyError as exc:
            raise _cannot_prepare(url, exc) from exc
    raise AssertionError("unreachable")


def _cannot_prepare(url: str, exc: SQLAlchemyError) -> StoreError:
    """A damaged, locked or read-only file says so (tuner/storage/health.py); another
    failure names the tables it could not create."""
    return health.database_error(url, exc, generic=False) or StoreError(
        f"cannot create tuner tables in {safe_url(url)!r}: {scrub_url(str(exc), url)}"
    )


def _create_or_upgrade(conn: Connection, url: str) -> int:
    found = stored_version(conn)  # again, under the lock: another worker may have done it
    refuse_newer(found, url)
    if found == SCHEMA_VERSION:
        return found
    had_tables = inspect(conn).has_table("tuner_launches")
    before = found if found is not None else (1 if had_tables else 0)
    version = before or SCHEMA_VERSION
    Base.metadata.create_all(conn)  # new tables of any version; existing ones are kept
    while version < SCHEMA_VERSION:
        MIGRATIONS[version](conn)
        version += 1
    if found is None:
        conn.execute(insert(MetaRow).values(key=VERSION_KEY, value=str(version)))
    else:
        conn.execute(update(MetaRow).where(MetaRow.key == VERSION_KEY).values(value=str(version)))
    return before


def refuse_newer(found: int | None, url: str) -> None:
    if found is not None and found > SCHEMA_VERSION:
        raise StoreError(
            f"{safe_url(url)}: tuner's tables are at schema version {found}, newer than this "
            f"tuner knows ({SCHEMA_VERSION}); a newer tuner wrote them. Upgrade tuner "
            "(pip install -U tuner) on this host to the version the other workers run."
        )


def lost_a_race(exc: SQLAlchemyError) -> bool:
    """Whether ``exc`` says another worker created a table or row first (worth a retry)."""
    message = str(exc).lower()
    return isinstance(exc, IntegrityError) or "already exists" in message or "locked" in message
