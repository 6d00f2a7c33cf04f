"""optuna's RDB storage ("the rdb"), opened once and kept: no code reaches into its privates.

Three names, one database: the *storage* is the URL a user gives (``--storage``), the
*store* is tuner's own tables through tuner/storage/ (``Store``), and the *rdb* is optuna's
``RDBStorage`` over the same database, opened here. A ``Study`` does not expose its rdb or
a trial's id; the few places that need them (the launch row's optuna trial id, failing a
dead worker's trial) go through the rdb opened here and its public ``BaseStorage`` methods.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager

import optuna
import sqlalchemy
import sqlalchemy.exc

from tuner.secrets import create_private_file, sqlite_file
from tuner.storage.driver import missing_driver
from tuner.storage.schema import ADVISORY_LOCK_KEY, lost_a_race
from tuner.storage.store import SQLITE_BUSY_TIMEOUT_S

OPTUNA_SCHEMA_LOCK_KEY = ADVISORY_LOCK_KEY + 1
"""PostgreSQL advisory lock held while optuna creates its tables (one past tuner's own)."""


def open_rdb(url: str, *, attempts: int = 3) -> optuna.storages.BaseStorage:
    """optuna's RDB storage for a SQLAlchemy URL (the same database as tuner's tables).

    Workers starting together on a fresh database race to create optuna's tables and its
    alembic version row. On PostgreSQL they take turns under an advisory lock; elsewhere
    the loser of the race retries and finds them made. On SQLite optuna's engine waits for
    a busy database as long as tuner's own does (Python's default is 5 s), and a new
    database file is owner-only. A URL whose driver is not installed is a StoreError that
    says how to install it (tuner/storage/driver.py).
    """
    path = sqlite_file(url)
    if path is not None:
        create_private_file(path)
    engine_kwargs = (
        {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}} if url.startswith("sqlite") else {}
    )
    for attempt in range(attempts):
        try:
            with _one_creator_at_a_time(url):
                return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
        except (sqlalchemy.exc.IntegrityError, sqlalchemy.exc.ProgrammingError) as exc:
            # IntegrityError: the version row; ProgrammingError: "alembic_version already exists".
            if attempt == attempts - 1 or not lost_a_race(exc):
                raise
            time.sleep(0.5 + random.random())
        except ImportError as exc:  # the URL's driver: optuna's engine or the lock's
            raise missing_driver(url, exc) from exc
    raise AssertionError("unreachable")


@contextmanager
def _one_creator_at_a_time(url: str) -> Iterator[None]:
    """On PostgreSQL, hold a session advisory lock while optuna checks and creates tables."""
    if not url.startswith("postgresql"):
        yield
        return
    engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(
                sqlalchemy.select(sqlalchemy.func.pg_advisory_lock(OPTUNA_SCHEMA_LOCK_KEY))
            )
            try:
                yield
            finally:
                conn.execute(
                    sqlalchemy.select(sqlalchemy.func.pg_advisory_unlock(OPTUNA_SCHEMA_LOCK_KEY))
                )
    finally:
        engine.dispose()


def trial_id(storage: optuna.storages.BaseStorage, study_name: str, number: int) -> int:
    """optuna's storage-wide id of the trial ``number`` of a study."""
    study_id = storage.get_study_id_from_name(study_name)
    return storage.get_trial_id_from_study_id_trial_number(study_id, number)
