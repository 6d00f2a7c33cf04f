"""The study database: tuner's own tables (``tuner_*``) beside optuna's, through SQLAlchemy 2.0.

One database holds both, so ``optuna-dashboard sqlite:///experiments.db`` shows the
study and everything a decision used can be recomputed from the raw rows kept here:
launches (one per optuna trial that started a server), levels (per round and
concurrency), requests (per request), samples (telemetry) and study-level facts.
"""

from __future__ import annotations

import datetime as dt
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from tuner.errors import StoreError

DEFAULT_STORAGE = "sqlite:///experiments.db"
REDACTED = "***"
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Env to store: values of names that look like secrets are replaced by ``***``."""
    return {k: (REDACTED if _SECRET_NAME.search(k) else v) for k, v in env.items()}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Argv to store: the value of a secret-looking flag (``--api-key X``, ``--hf-token=X``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
        elif arg.startswith("-") and _SECRET_NAME.search(arg.split("=", 1)[0]):
            if "=" in arg:
                out.append(arg.split("=", 1)[0] + "=" + REDACTED)
            else:
                out.append(arg)
                hide_next = True
        else:
            out.append(arg)
    return out


def utcnow() -> dt.datetime:
    """Timestamps as stored: timezone-aware UTC."""
    return dt.datetime.now(dt.timezone.utc)


class Base(DeclarativeBase):
    pass


class StudyRow(Base):
    """Study-level facts optuna does not keep: the space, inventory, noise, stop reason."""

    __tablename__ = "tuner_studies"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(512), unique=True)
    space_path: Mapped[str | None] = mapped_column(Text)
    space_text: Mapped[str | None] = mapped_column(Text)
    inventory: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    noise: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    stop_reason: Mapped[str | None] = mapped_column(String(32))
    stop_detail: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow
    )


class LaunchRow(Base):
    """One start of the server for one optuna trial (or a standalone `tuner bench --record`)."""

    __tablename__ = "tuner_launches"

    id: Mapped[int] = mapped_column(primary_key=True)
    study: Mapped[str] = mapped_column(String(512), index=True)
    trial_id: Mapped[int | None] = mapped_column(Integer, index=True)  # optuna's trial_id
    trial_number: Mapped[int | None] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))  # baseline | search | confirm | bench
    config_hash: Mapped[str] = mapped_column(String(64), index=True)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    env: Mapped[dict[str, str]] = mapped_column(JSON)
    unset_env: Mapped[list[str]] = mapped_column(JSON, default=list)
    argv: Mapped[list[str]] = mapped_column(JSON)
    host: Mapped[str] = mapped_column(String(255), default=socket.gethostname)
    port: Mapped[int | None] = mapped_column(Integer)
    pid: Mapped[int | None] = mapped_column(Integer)
    pgid: Mapped[int | None] = mapped_column(Integer)
    create_time: Mapped[float | None] = mapped_column(Float)
    cmdline: Mapped[list[str] | None] = mapped_column(JSON)
    marker: Mapped[str | None] = mapped_column(String(64))  # env marker every child inherits
    status: Mapped[str] = mapped_column(String(16), index=True)  # see LaunchStatus
    reason: Mapped[str | None] = mapped_column(Text)
    log_path: Mapped[str | None] = mapped_column(Text)
    log_tail: Mapped[str | None] = mapped_column(Text)
    seconds_to_healthy: Mapped[float | None] = mapped_column(Float)
    objective_mean: Mapped[float | None] = mapped_column(Float)
    objective_se: Mapped[float | None] = mapped_column(Float)
    objective_rounds: Mapped[list[float] | None] = mapped_column(JSON)
    rounds_done: Mapped[int] = mapped_column(Integer, default=0)
    cleanup_ok: Mapped[bool | None] = mapped_column(Boolean)
    cleanup: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    gpu_summary: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class LevelRow(Base):
    """The summary of one concurrency level in one round of one launch."""

    __tablename__ = "tuner_levels"

    id: Mapped[int] = mapped_column(primary_key=True)
    launch_id: Mapped[int] = mapped_column(ForeignKey("tuner_launches.id"), index=True)
    round: Mapped[int] = mapped_column(Integer)
    concurrency: Mapped[int] = mapped_column(Integer)
    completed: Mapped[int] = mapped_column(Integer)
    errors: Mapped[int] = mapped_column(Integer)
    duration_s: Mapped[float] = mapped_column(Float)
    output_throughput: Mapped[float | None] = mapped_column(Float)
    summary: Mapped[dict[str, Any]] = mapped_column(JSON)
    server_metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    gpu_summary: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    flagged: Mapped[str | None] = mapped_column(Text)


class RequestRow(Base):
    """One measured request: the raw record every summary is computed from."""

    __tablename__ = "tuner_requests"

    id: Mapped[int] = mapped_column(primary_key=True)
    level_id: Mapped[int] = mapped_column(ForeignKey("tuner_levels.id"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    start_s: Mapped[float] = mapped_column(Float)
    ttft_s: Mapped[float | None] = mapped_column(Float)
    e2el_s: Mapped[float | None] = mapped_column(Float)
    itl_s: Mapped[list[float] | None] = mapped_column(JSON)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    output_tokens: Mapped[int] = mapped_column(Integer)
    reasoning_tokens: Mapped[int] = mapped_column(Integer, default=0)
    tokens_estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)


class SampleRow(Base):
    """One telemetry sample (GPU or host) taken during a launch's benchmark."""

    __tablename__ = "tuner_samples"

    id: Mapped[int] = mapped_column(primary_key=True)
    launch_id: Mapped[int] = mapped_column(ForeignKey("tuner_launches.id"), index=True)
    kind: Mapped[str] = mapped_column(String(8))  # gpu | host
    time_s: Mapped[float] = mapped_column(Float)
    gpu_index: Mapped[int | None] = mapped_column(Integer)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


class LaunchStatus:
    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    PRUNED = "pruned"


@dataclass(frozen=True)
class ServerIdentityRecord:
    """What crash recovery needs of a launch that was still running."""

    launch_id: int
    trial_id: int | None
    trial_number: int | None
    pid: int | None
    pgid: int | None
    create_time: float | None
    cmdline: tuple[str, ...]
    marker: str
    host: str


def make_engine(url: str) -> Engine:
    """An engine for any SQLAlchemy URL; SQLite gets WAL and a busy timeout for sharing."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": 60})

            @event.listens_for(engine, "connect")
            def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.close()

            return engine
        return create_engine(url, pool_pre_ping=True)
    except (SQLAlchemyError, ImportError) as exc:
        raise StoreError(f"cannot open storage {url!r}: {exc}") from exc


class Store:
    """All reads and writes of tuner's tables; one instance per storage URL."""

    def __init__(self, url: str = DEFAULT_STORAGE) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._create_tables()
        self._session = sessionmaker(self.engine, expire_on_commit=False)

    def _create_tables(self, attempts: int = 3) -> None:
        """Create the tuner_* tables unless they exist.

        Workers starting at once on a shared PostgreSQL race to create them; the
        loser sees a unique violation, and its retry finds the tables in place.
        """
        for attempt in range(attempts):
            try:
                Base.metadata.create_all(self.engine)
                return
            except IntegrityError:
                if attempt + 1 == attempts:
                    raise StoreError(f"cannot create tuner tables in {self.url!r}") from None
            except SQLAlchemyError as exc:
                raise StoreError(f"cannot create tuner tables in {self.url!r}: {exc}") from exc

    def session(self) -> Session:
        return self._session()

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
        with self.session() as s:
            return s.scalar(select(StudyRow).where(StudyRow.name == name))

    def update_study(self, name: str, **fields: Any) -> None:
        with self.session() as s, s.begin():
            s.execute(update(StudyRow).where(StudyRow.name == name).values(**fields))

    # --- launches ------------------------------------------------------------------------

    def add_launch(self, **fields: Any) -> int:
        fields.setdefault("status", LaunchStatus.RUNNING)
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

    def launch_for_trial(self, study: str, trial_number: int) -> LaunchRow | None:
        query = (
            select(LaunchRow)
            .where(LaunchRow.study == study, LaunchRow.trial_number == trial_number)
            .order_by(LaunchRow.id.desc())
        )
        with self.session() as s:
            return s.scalars(query).first()

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

    # --- levels, requests, samples --------------------------------------------------------

    def add_level(
        self,
        launch_id: int,
        *,
        round_index: int,
        summary: Mapping[str, Any],
        requests: Sequence[Mapping[str, Any]],
        server_metrics: Mapping[str, Any] | None = None,
        gpu_summary: Mapping[str, Any] | None = None,
        flagged: str | None = None,
    ) -> int:
        """Store a level's summary and every raw request record in one transaction."""
        with self.session() as s, s.begin():
            row = LevelRow(
                launch_id=launch_id,
                round=round_index,
                concurrency=int(summary["concurrency"]),
                completed=int(summary["completed"]),
                errors=int(summary["errors"]),
                duration_s=float(summary.get("duration_s") or 0.0),
                output_throughput=summary.get("output_throughput"),
                summary=dict(summary),
                server_metrics=dict(server_metrics) if server_metrics else None,
                gpu_summary=dict(gpu_summary) if gpu_summary else None,
                flagged=flagged,
            )
            s.add(row)
            s.flush()
            if requests:
                s.execute(insert(RequestRow), [{**r, "level_id": row.id} for r in requests])
            return row.id

    def levels(self, launch_id: int) -> list[LevelRow]:
        query = select(LevelRow).where(LevelRow.launch_id == launch_id).order_by(LevelRow.id)
        with self.session() as s:
            return list(s.scalars(query))

    def requests(self, level_id: int) -> list[RequestRow]:
        query = select(RequestRow).where(RequestRow.level_id == level_id).order_by(RequestRow.idx)
        with self.session() as s:
            return list(s.scalars(query))

    def add_samples(self, launch_id: int, rows: Iterable[Mapping[str, Any]]) -> None:
        batch = [{**r, "launch_id": launch_id} for r in rows]
        if batch:
            with self.session() as s, s.begin():
                s.execute(insert(SampleRow), batch)

    def samples(self, launch_id: int, kind: str | None = None) -> list[SampleRow]:
        query = select(SampleRow).where(SampleRow.launch_id == launch_id).order_by(SampleRow.id)
        if kind is not None:
            query = query.where(SampleRow.kind == kind)
        with self.session() as s:
            return list(s.scalars(query))

    def check_writable(self) -> None:
        """Raise StoreError unless a write to the database goes through."""
        try:
            with self.session() as s, s.begin():
                s.execute(update(StudyRow).where(StudyRow.id == -1).values(stop_reason=None))
        except SQLAlchemyError as exc:
            raise StoreError(f"storage {self.url!r} is not writable: {exc}") from exc
