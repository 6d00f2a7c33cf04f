"""The schema version and the heartbeat's clock on PostgreSQL (timestamps with time zones,
transactional DDL, ALTER TABLE as PostgreSQL runs it)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from optuna.trial import TrialState
from sqlalchemy import create_engine, inspect, text

from tests.unit.test_study_dead_workers import Notes, _recover, _remote_trial
from tuner.errors import StoreError
from tuner.storage import Store
from tuner.storage.schema import SCHEMA_VERSION
from tuner.study import attrs
from tuner.study.run.optuna_rdb import open_rdb

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def _make_version_1(url: str) -> None:
    """Today's tables less what schema 2 added: the layout of a tuner before versions."""
    Store(url)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE tuner_meta, tuner_claims, tuner_workers"))
        conn.execute(text("DROP INDEX ix_tuner_launches_fingerprint"))
        conn.execute(text("ALTER TABLE tuner_launches DROP COLUMN fingerprint"))
        conn.execute(
            text(
                "INSERT INTO tuner_launches (study, role, config_hash, params, env, unset_env, "
                "argv, host, status, rounds_done, started_at) VALUES ('old', 'baseline', "
                "'abc', '{}', '{}', '[]', '[]', 'h', 'complete', 0, now())"
            )
        )
    engine.dispose()


def test_a_version_1_database_is_upgraded_in_place(pg_storage: str) -> None:
    _make_version_1(pg_storage)
    store = Store(pg_storage)
    assert store.schema_version_found == 1
    columns = {c["name"] for c in inspect(store.engine).get_columns("tuner_launches")}
    assert "fingerprint" in columns
    (row,) = store.launches("old")
    assert row.config_hash == "abc" and row.fingerprint is None
    assert Store(pg_storage).schema_version_found == SCHEMA_VERSION


def test_a_newer_database_is_refused(pg_storage: str) -> None:
    Store(pg_storage)
    engine = create_engine(pg_storage)
    with engine.begin() as conn:
        conn.execute(text("UPDATE tuner_meta SET value = '99'"))
    engine.dispose()
    with pytest.raises(StoreError, match="schema version 99, newer than this tuner knows"):
        Store(pg_storage)


def test_a_silent_worker_on_another_host_loses_its_trial(tmp_path: Path, pg_storage: str) -> None:
    study, store = _remote_trial(tmp_path, silent_for_s=600, url=pg_storage)
    assert _recover(study, store, Notes()) == [0]
    dead, again = study.get_trials()
    assert dead.state == TrialState.FAIL
    assert "sent no heartbeat for 6" in dead.user_attrs[attrs.REASON]
    assert again.state == TrialState.WAITING and again.user_attrs[attrs.RETRY_OF] == 0

    fresh, fresh_store = _remote_trial(tmp_path, silent_for_s=5, url=pg_storage, name="s2")
    assert _recover(fresh, fresh_store, Notes()) == []


def _open_when_told(url: str, start: Any) -> str:
    start.wait()
    try:
        open_rdb(url, attempts=1)  # one try: the lock, not the retry, must make it safe
    except Exception as exc:  # noqa: BLE001 - the test reports whatever a worker hit
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_workers_opening_a_fresh_database_at_once_all_get_optuna_storage(pg_storage: str) -> None:
    # CI saw two workers race to create alembic_version: DuplicateTable for the loser.
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(6) as pool:
            pending = [pool.apply_async(_open_when_told, (pg_storage, start)) for _ in range(6)]
            time.sleep(2.0)  # every worker imported and waiting
            start.set()
            results = [p.get(timeout=60) for p in pending]
    assert results == ["ok"] * 6, results
