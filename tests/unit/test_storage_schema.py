"""tuner.storage.schema: the tuner_* tables' version is recorded, upgraded, never downgraded."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from tuner.errors import StoreError
from tuner.storage import Store
from tuner.storage.schema import SCHEMA_VERSION, VERSION_KEY

VERSION_1_LAUNCHES = """CREATE TABLE tuner_launches (
    id INTEGER PRIMARY KEY, study VARCHAR(512), trial_id INTEGER, trial_number INTEGER,
    role VARCHAR(16), config_hash VARCHAR(64), params JSON, env JSON, unset_env JSON,
    argv JSON, host VARCHAR(255), port INTEGER, pid INTEGER, pgid INTEGER,
    create_time FLOAT, cmdline JSON, marker VARCHAR(64), status VARCHAR(16), reason TEXT,
    log_path TEXT, log_tail TEXT, seconds_to_healthy FLOAT, objective_mean FLOAT,
    objective_se FLOAT, objective_rounds JSON, rounds_done INTEGER, cleanup_ok BOOLEAN,
    cleanup JSON, gpu_summary JSON, started_at DATETIME, finished_at DATETIME)"""


def _version(url: str) -> str | None:
    with create_engine(url).connect() as conn:
        return conn.execute(
            text("SELECT value FROM tuner_meta WHERE key = :k"), {"k": VERSION_KEY}
        ).scalar()


def test_a_new_database_is_created_at_the_current_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/e.db"
    assert Store(url).schema_version_found == 0
    assert _version(url) == str(SCHEMA_VERSION)
    assert Store(url).schema_version_found == SCHEMA_VERSION  # a second open changes nothing


def test_a_database_of_tuner_before_versions_is_upgraded_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(VERSION_1_LAUNCHES))
        conn.execute(
            text(
                "INSERT INTO tuner_launches (study, role, config_hash, params, env, argv, "
                "host, status) VALUES ('old', 'baseline', 'abc', '{}', '{}', '[]', 'h', "
                "'complete')"
            )
        )
    store = Store(url)
    assert store.schema_version_found == 1
    assert _version(url) == str(SCHEMA_VERSION)
    columns = {c["name"] for c in inspect(engine).get_columns("tuner_launches")}
    assert "fingerprint" in columns
    assert {"tuner_meta", "tuner_claims", "tuner_workers"} <= set(inspect(engine).get_table_names())
    (row,) = store.launches("old")
    assert row.config_hash == "abc" and row.fingerprint is None
    store.fingerprint = "f" * 12
    launch = store.add_launch(
        study="old", role="search", config_hash="d", params={}, env={}, argv=[]
    )
    assert store.launches("old")[-1].id == launch
    assert store.launches("old")[-1].fingerprint == "f" * 12


def test_a_database_a_newer_tuner_wrote_is_refused_with_the_fix(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/e.db"
    Store(url)
    with create_engine(url).begin() as conn:
        conn.execute(
            text("UPDATE tuner_meta SET value = :v WHERE key = :k"),
            {"v": str(SCHEMA_VERSION + 1), "k": VERSION_KEY},
        )
    newer = SCHEMA_VERSION + 1
    with pytest.raises(StoreError, match=rf"schema version {newer}, newer .*Upgrade tuner"):
        Store(url)
    assert _version(url) == str(SCHEMA_VERSION + 1)  # refused before anything was written


def test_a_version_2_database_gains_the_capacity_columns_and_keeps_its_levels(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/v2.db"
    store = Store(url)
    launch = store.add_launch(study="s", role="search", config_hash="a", params={}, env={}, argv=[])
    store.add_level(launch, round_index=0, summary={"concurrency": 8, "completed": 1, "errors": 0},
                    requests=[])  # fmt: skip
    engine = create_engine(url)
    with engine.begin() as conn:  # back to version 2: the columns of version 3 dropped
        conn.execute(text("ALTER TABLE tuner_launches DROP COLUMN capacity"))
        conn.execute(text("ALTER TABLE tuner_levels DROP COLUMN capacity_search"))
        conn.execute(text("UPDATE tuner_meta SET value = '2' WHERE key = :k"), {"k": VERSION_KEY})
    upgraded = Store(url)
    assert upgraded.schema_version_found == 2
    assert _version(url) == str(SCHEMA_VERSION)
    (old,) = upgraded.levels(launch)  # NULL: a fixed level, as every level before version 3
    assert old.capacity_search is None and old.concurrency == 8
    assert upgraded.levels(launch, capacity_search=True) == []
    searched = {"concurrency": 16, "completed": 1, "errors": 0}
    upgraded.add_level(launch, round_index=0, summary=searched, requests=[], capacity_search=True)
    assert [lv.concurrency for lv in upgraded.levels(launch)] == [8]
    assert [lv.concurrency for lv in upgraded.levels_of([launch], capacity_search=True)] == [16]
    upgraded.update_launch(launch, capacity=[{"round": 0, "capacity": 12}])
    assert upgraded.launches("s")[0].capacity == [{"round": 0, "capacity": 12}]
