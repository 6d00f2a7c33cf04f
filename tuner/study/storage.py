"""optuna's storage, opened once and kept, so that no code reaches into private attributes.

A ``Study`` does not expose its storage or a trial's id; the few places that need them
(the launch row's optuna trial id, failing a dead worker's trial) go through the
storage object opened here and its public ``BaseStorage`` methods.
"""

from __future__ import annotations

import random
import time

import optuna
import sqlalchemy.exc

from tuner.secrets import create_private_file, sqlite_file
from tuner.storage.store import SQLITE_BUSY_TIMEOUT_S


def open_storage(url: str, *, attempts: int = 3) -> optuna.storages.BaseStorage:
    """optuna's RDB storage for a SQLAlchemy URL (the same database as tuner's tables).

    Workers starting together on a fresh PostgreSQL race to create optuna's tables; the
    loser of the race retries and finds them made. On SQLite optuna's engine waits for a
    busy database as long as tuner's own does (Python's default is 5 s), and a new
    database file is owner-only.
    """
    path = sqlite_file(url)
    if path is not None:
        create_private_file(path)
    engine_kwargs = (
        {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}} if url.startswith("sqlite") else {}
    )
    for attempt in range(attempts):
        try:
            return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
        except sqlalchemy.exc.IntegrityError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")


def trial_id(storage: optuna.storages.BaseStorage, study_name: str, number: int) -> int:
    """optuna's storage-wide id of the trial ``number`` of a study."""
    study_id = storage.get_study_id_from_name(study_name)
    return storage.get_trial_id_from_study_id_trial_number(study_id, number)
