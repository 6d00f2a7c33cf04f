"""The study database's API: every read and write of tuner's tables, one ``Store`` per URL.

The tables themselves are in tuner/storage/tables.py; the levels, requests and samples
are read and written by ``Measurements`` (measurements.py), the claims and worker rows by
``Coordination`` (coordination.py), both mixed into ``Store``. Values that look like secrets are
redacted before they are written (``redact_env``, ``redact_argv``, from tuner/secrets.py);
a new SQLite file is created readable by its owner only, and errors show the URL with
its password hidden. ``Store(url, read_only=True)`` is the commands that only read: it
creates no database and no table and writes nothing (tuner/storage/health.py); a damaged,
locked, read-only or foreign database is one line that says what to do, either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import create_engine, delete, event, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from tuner.errors import StoreError, UnusableDatabaseError
from tuner.secrets import (
    REDACTED,
    create_private_file,
    redact_argv,
    redact_env,
    safe_url,
    scrub_url,
    sqlite_file,
)
from tuner.storage import health, schema
from tuner.storage.coordination import Coordination, as_utc
from tuner.storage.driver import missing_driver
from tuner.storage.measurements import Measurements
from tuner.storage.tables import (
    ClaimRow,
    LaunchRow,
    LaunchStatus,
    ServerIdentityRecord,
    StudyRow,
    WorkerRow,
)

DEFAULT_STORAGE = "sqlite:///experiments.db"
SQLITE_BUSY_TIMEOUT_S = 60
"""How long a SQLite write waits for another writer (tuner's engine and optuna's alike)."""

__all__ = [
    "DEFAULT_STORAGE",
    "REDACTED",
    "Store",
    "as_utc",
    "make_engine",
    "redact_argv",
    "redact_env",
]


def make_engine(url: str) -> Engine:
    """An engine for any SQLAlchemy URL; SQLite gets WAL and a busy timeout for sharing.

    A SQLite file that does not exist yet is created first, readable by its owner only:
    the study holds the servers' command lines and logs.
    """
    try:
        if url.startswith("sqlite"):
            path = sqlite_file(url)
            if path is not None:
                health.writable_file(url)  # not a database, or read-only: said before SQLite
                create_private_file(path)
            engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

            @event.listens_for(engine, "connect")
            def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()

            return engine
        return create_engine(url, pool_pre_ping=True)
    except ImportError as exc:  # the URL's driver (tuner/storage/driver.py)
        raise missing_driver(url, exc) from exc
    except SQLAlchemyError as exc:
        raise health.database_error(url, exc, generic=False) or StoreError(
            f"cannot open storage {_shown(url, exc)}"
        ) from exc


class Store(Measurements, Coordination):
    """All reads and writes of tuner's tables; one instance per storage URL.

    ``read_only``: for the commands that only read. The database must exist (a missing
    SQLite file is an error, not a new database), nothing is created or written, and a
    database without tuner's tables reads as one without studies.
    """

    def __init__(self, url: str = DEFAULT_STORAGE, *, read_only: bool = False) -> None:
        self.url = url
        self.read_only = read_only
        self.has_tables = True
        self.created_file = False
        """Whether this Store created its SQLite file (a run refused before its first
        launch removes it again: tuner/study/run/sweep.py)."""
        if read_only:
            self.engine = health.read_engine(url)
            self.schema_version_found = self._read_version()
        else:
            path = sqlite_file(url)
            self.created_file = path is not None and not path.exists()
            self.engine = make_engine(url)
            if path is not None and not self.created_file:
                health.refuse_foreign(health.tables(self.engine, url), url)
            # Create, upgrade, or refuse a database a newer tuner wrote (tuner/storage/schema.py).
            self.schema_version_found = schema.prepare(self.engine, url)
        self.fingerprint: str | None = None
        """The hardware fingerprint this process records on every launch it adds."""
        self._session = sessionmaker(self.engine, expire_on_commit=False)

    def session(self) -> Session:
        return self._session()

    def _read_version(self) -> int:
        """The schema version, read only; an older one is upgraded unless the file is
        read-only (then the error says to copy it); no tuner tables: ``has_tables`` False."""
        found_tables = health.tables(self.engine, self.url)
        health.refuse_foreign(found_tables, self.url)
        if "tuner_studies" not in found_tables:
            self.has_tables = False
            return 0
        try:
            with self.engine.connect() as conn:
                found = schema.stored_version(conn)
        except SQLAlchemyError as exc:
            raise health.database_error(self.url, exc) or StoreError(str(exc)) from exc
        schema.refuse_newer(found, self.url)
        if found == schema.SCHEMA_VERSION:
            return found
        path = sqlite_file(self.url)
        if path is not None and health.is_read_only(path):
            raise UnusableDatabaseError(
                f"{path}: tuner's tables are at schema version {found or 1}, older than this "
                f"tuner's ({schema.SCHEMA_VERSION}), and the file is read-only, so they cannot "
                "be upgraded: copy it somewhere writable and pass --storage sqlite:///COPY",
                kind="read_only",
            )
        writer = make_engine(self.url)  # upgrading is no new database, no new study
        try:
            return schema.prepare(writer, self.url)
        finally:
            writer.dispose()

    # --- study ---------------------------------------------------------------------------

    def ensure_study(self, name: str, *, space_path: str | None, space_text: str | None) -> None:
        """Create the study's row, or update its space; safe when workers start at once."""
        for _ in range(2):
            try:
                with self.session() as s, s.begin():
                    row = s.scalar(select(StudyRow).where(StudyRow.name == name))
                    if row is None:
                        s.add(StudyRow(name=name, space_path=space_path, space_text=space_text))
                    elif space_text is not None:
                        row.space_path, row.space_text = space_path, space_text
                return
            except IntegrityError:
                continue  # another worker inserted it first: update it on the next pass

    def study(self, name: str) -> StudyRow | None:
        if not self.has_tables:
            return None
        with self.session() as s:
            return s.scalar(select(StudyRow).where(StudyRow.name == name))

    def study_names(self) -> list[str]:
        if not self.has_tables:
            return []
        with self.session() as s:
            return list(s.scalars(select(StudyRow.name).order_by(StudyRow.name)))

    def delete_study(self, name: str) -> None:
        """Remove a study that never launched: its row, its workers and its claims
        (a run refused before its first launch leaves nothing behind)."""
        with self.session() as s, s.begin():
            for table in (ClaimRow, WorkerRow):
                s.execute(delete(table).where(table.study == name))
            s.execute(delete(StudyRow).where(StudyRow.name == name))

    def update_study(self, name: str, **fields: Any) -> None:
        with self.session() as s, s.begin():
            s.execute(update(StudyRow).where(StudyRow.name == name).values(**fields))

    # --- launches ------------------------------------------------------------------------

    def add_launch(self, **fields: Any) -> int:
        fields.setdefault("status", LaunchStatus.RUNNING)
        fields.setdefault("fingerprint", self.fingerprint)
        if "env" in fields:
            fields["env"] = redact_env(fields["env"])
        for key in ("argv", "cmdline"):
            if fields.get(key) is not None:
                fields[key] = redact_argv(fields[key])
        with self.session() as s, s.begin():
            row = LaunchRow(**fields)
            s.add(row)
            s.flush()
            return row.id

    def update_launch(self, launch_id: int, **fields: Any) -> None:
        with self.session() as s, s.begin():
            s.execute(update(LaunchRow).where(LaunchRow.id == launch_id).values(**fields))

    def launches(self, study: str, *, status: str | None = None) -> list[LaunchRow]:
        query = select(LaunchRow).where(LaunchRow.study == study).order_by(LaunchRow.id)
        if status is not None:
            query = query.where(LaunchRow.status == status)
        with self.session() as s:
            return list(s.scalars(query))

    def launches_by_id(self, launch_ids: Sequence[int]) -> list[LaunchRow]:
        """Several launches in one query, by id (a launch's load, read as a metric)."""
        if not launch_ids:
            return []
        query = select(LaunchRow).where(LaunchRow.id.in_(list(launch_ids))).order_by(LaunchRow.id)
        with self.session() as s:
            return list(s.scalars(query))

    def launch_for_trial(self, study: str, trial_number: int) -> LaunchRow | None:
        """The trial's last launch (the one that measured, after a retried taken port)."""
        launches = self.launches_for_trial(study, trial_number)
        return launches[-1] if launches else None

    def launches_for_trial(self, study: str, trial_number: int) -> list[LaunchRow]:
        """Every launch of one trial, oldest first: one, or more when its port was taken."""
        query = (
            select(LaunchRow)
            .where(LaunchRow.study == study, LaunchRow.trial_number == trial_number)
            .order_by(LaunchRow.id)
        )
        with self.session() as s:
            return list(s.scalars(query))

    def running_servers(self, study: str | None = None) -> list[ServerIdentityRecord]:
        """Launches still marked running: after a crash of tuner, their servers may live on."""
        query = select(LaunchRow).where(LaunchRow.status == LaunchStatus.RUNNING)
        if study is not None:
            query = query.where(LaunchRow.study == study)
        with self.session() as s:
            return [
                ServerIdentityRecord(
                    launch_id=r.id,
                    trial_id=r.trial_id,
                    trial_number=r.trial_number,
                    pid=r.pid,
                    pgid=r.pgid,
                    create_time=r.create_time,
                    cmdline=tuple(r.cmdline or ()),
                    marker=r.marker or "",
                    host=r.host,
                )
                for r in s.scalars(query)
            ]

    def check_writable(self) -> None:
        """Raise StoreError unless a write to the database goes through."""
        try:
            with self.session() as s, s.begin():
                s.execute(update(StudyRow).where(StudyRow.id == -1).values(stop_reason=None))
        except SQLAlchemyError as exc:
            raise StoreError(
                f"storage {safe_url(self.url)!r} is not writable: {scrub_url(str(exc), self.url)}"
            ) from exc


def _shown(url: str, exc: BaseException) -> str:
    """``'URL': error`` for a message, the password hidden in both."""
    return f"{safe_url(url)!r}: {scrub_url(str(exc), url)}"
