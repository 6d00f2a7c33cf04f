"""Expired claims on the real PostgreSQL: of two workers taking over one, exactly one wins."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.unit.test_study_claims import GONE_HERE, ME, OTHER, two_take_over_at_once
from tuner.storage import Store

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def test_two_workers_taking_over_the_same_expired_claim_one_wins(
    tmp_path: Path, pg_storage: str
) -> None:
    assert sorted(two_take_over_at_once(tmp_path, pg_storage)) == [False, True]


@pytest.mark.parametrize("first", ["commits", "rolls back"])
def test_a_takeover_waits_for_the_one_in_flight_and_wins_only_if_it_failed(
    pg_storage: str, first: str
) -> None:
    # The first worker's UPDATE is in flight (its transaction open) when the second's
    # arrives: the second waits on the row, then finds the holder changed (0 rows) or,
    # when the first rolled back, still the dead one (it wins).
    store = Store(pg_storage)
    assert store.claim("c", "baseline", "1", GONE_HERE)
    second_worker = Store(pg_storage)  # its schema check done before the row is locked
    engine = create_engine(pg_storage)
    won: list[bool] = []
    try:
        with engine.connect() as first_worker, engine.connect() as watch:
            # Autocommit: a transaction would see pg_stat_activity as of its first read.
            watch = watch.execution_options(isolation_level="AUTOCOMMIT")
            tx = first_worker.begin()
            changed = first_worker.execute(
                text(
                    "UPDATE tuner_claims SET worker = :me WHERE study = 'c' AND kind = "
                    "'baseline' AND key = '1' AND worker = :dead"
                ),
                {"me": ME, "dead": GONE_HERE},
            ).rowcount
            assert changed == 1
            pid = first_worker.execute(text("SELECT pg_backend_pid()")).scalar_one()
            second = threading.Thread(
                target=lambda: won.append(
                    second_worker.take_over_claim(
                        "c", "baseline", "1", holder=GONE_HERE, worker=OTHER
                    )
                )
            )
            second.start()
            blocked = text(
                "SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"
            )
            deadline = time.monotonic() + 60
            while watch.execute(blocked, {"pid": pid}).scalar_one() == 0:
                assert time.monotonic() < deadline, "the second UPDATE never waited on the row"
                time.sleep(0.05)
            assert won == []  # it waits on the first
            if first == "commits":
                tx.commit()
            else:
                tx.rollback()
            second.join(timeout=60)
    finally:
        engine.dispose()
    if first == "commits":
        assert won == [False]
        assert store.claim_holder("c", "baseline", "1") == ME
    else:
        assert won == [True]
        assert store.claim_holder("c", "baseline", "1") == OTHER
