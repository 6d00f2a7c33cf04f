"""The workers' coordination in the store (docs/distributed.md): claims, worker rows, the
database's clock.

A mixin of ``Store`` (tuner/storage/store.py), which gives it its sessions. The database
decides every race here (a unique constraint, an UPDATE that matches one holder), the
same way on SQLite and PostgreSQL, and heartbeats are stamped and aged by the
database's clock, so hosts whose clocks differ still agree on who is alive.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tuner.errors import StoreError
from tuner.storage.tables import ClaimRow, WorkerRow, utcnow


class Coordination:
    """Claims and worker rows of the studies; ``session`` is the Store's."""

    def session(self) -> Session:
        raise NotImplementedError("Store gives its sessions")

    def claim(self, study: str, kind: str, key: str, worker: str) -> bool:
        """Claim ``kind``/``key`` for ``worker``: True for the one worker whose INSERT wins.

        The unique constraint decides, on SQLite and PostgreSQL alike: a second claim of
        the same key fails with an IntegrityError, which means someone else has it.
        """
        try:
            with self.session() as s, s.begin():
                s.add(ClaimRow(study=study, kind=kind, key=key, worker=worker))
            return True
        except IntegrityError:
            return False

    def claim_holder(self, study: str, kind: str, key: str) -> str | None:
        """The worker that holds ``kind``/``key`` now (None: nobody claimed it)."""
        query = select(ClaimRow.worker).where(
            ClaimRow.study == study, ClaimRow.kind == kind, ClaimRow.key == key
        )
        with self.session() as s:
            return s.scalar(query)

    def take_over_claim(self, study: str, kind: str, key: str, *, holder: str, worker: str) -> bool:
        """Hand ``kind``/``key`` from ``holder`` to ``worker``: True for the one worker whose
        UPDATE changed the row.

        The row changes only while ``holder`` still holds it, so of two workers that take
        over the same claim at once one wins: PostgreSQL makes the second UPDATE wait for
        the first and then finds the holder changed; SQLite runs one writer at a time.
        """
        query = (
            update(ClaimRow)
            .where(
                ClaimRow.study == study,
                ClaimRow.kind == kind,
                ClaimRow.key == key,
                ClaimRow.worker == holder,
            )
            .values(worker=worker, created_at=utcnow())
        )
        with self.session() as s, s.begin():
            changed = s.connection().execute(query).rowcount
        return changed == 1

    def claimed(self, study: str, kind: str) -> dict[str, str]:
        """Every claim of ``kind`` in a study: key -> the worker that won it."""
        query = select(ClaimRow).where(ClaimRow.study == study, ClaimRow.kind == kind)
        with self.session() as s:
            return {r.key: r.worker for r in s.scalars(query)}

    def db_now(self) -> dt.datetime:
        """The database's clock (UTC): heartbeats are written and aged with it, not the hosts'."""
        with self.session() as s:
            return as_utc(s.scalar(select(func.current_timestamp())))

    def register_worker(
        self, study: str, worker: str, *, host: str, fingerprint: str, hardware: dict[str, Any]
    ) -> None:
        """Add this worker's row (started and beating now, by the database's clock)."""
        now = func.current_timestamp()
        facts = dict(host=host, fingerprint=fingerprint, hardware=hardware, heartbeat_at=now)
        try:
            with self.session() as s, s.begin():
                row = dict(study=study, worker=worker, started_at=now, **facts)
                s.execute(insert(WorkerRow).values(**row))
        except IntegrityError:  # the same process runs the study again (tests, a library user)
            with self.session() as s, s.begin():
                s.execute(
                    update(WorkerRow)
                    .where(WorkerRow.study == study, WorkerRow.worker == worker)
                    .values(started_at=now, stopped_at=None, **facts)
                )

    def heartbeat(self, study: str, worker: str, *, stopped: bool = False) -> None:
        """The worker is alive (or, with ``stopped``, has exited cleanly)."""
        values: dict[str, Any] = {"heartbeat_at": func.current_timestamp()}
        if stopped:
            values["stopped_at"] = func.current_timestamp()
        with self.session() as s, s.begin():
            s.execute(
                update(WorkerRow)
                .where(WorkerRow.study == study, WorkerRow.worker == worker)
                .values(**values)
            )

    def workers(self, study: str) -> list[WorkerRow]:
        query = select(WorkerRow).where(WorkerRow.study == study).order_by(WorkerRow.id)
        with self.session() as s:
            return list(s.scalars(query))


def as_utc(value: dt.datetime | str | None) -> dt.datetime:
    """A timestamp read back from either database as an aware UTC datetime.

    SQLite keeps ``CURRENT_TIMESTAMP`` as naive UTC text; PostgreSQL returns it aware.
    """
    if value is None:
        raise StoreError("the database returned no timestamp")
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)
