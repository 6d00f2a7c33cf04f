"""The PostgreSQL tier: a fresh database per test on the local server, dropped afterwards.

Skipped, with the reason, where no PostgreSQL answers at TUNER_TEST_POSTGRES (default
127.0.0.1:5432, database test, user postgres, trust auth); CI starts one (.ci/run).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

ADMIN_URL = os.environ.get("TUNER_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def pg_storage() -> Iterator[str]:
    """A SQLAlchemy URL of a new database of its own, dropped (connections and all) after."""
    psycopg = pytest.importorskip(
        "psycopg", reason="psycopg is not installed: pip install launch-tuner[postgres]"
    )
    name = f"tuner_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL at {ADMIN_URL}: {exc}")
    admin.execute(f'CREATE DATABASE "{name}"')
    base = ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    try:
        yield f"{base}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
