"""tuner's tables (``tuner_*``), beside optuna's in the same database: SQLAlchemy 2.0 models.

Everything a decision used can be recomputed from the raw rows kept here: launches (one
per optuna trial that started a server), levels (per round and concurrency), requests
(per request), samples (telemetry) and study-level facts. ``request_row`` turns the
benchmark's ``RequestRecord`` into a ``tuner_requests`` row.
"""

from __future__ import annotations

import datetime as dt
import socket
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
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tuner.bench.records import RequestRecord


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
    fingerprint: Mapped[str | None] = mapped_column(String(32), index=True)  # schema 2
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
    capacity: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)  # schema 3, per round
    # schema 4: "screen" (the space's screening args and env added) or "full" (NULL: full)
    fidelity: Mapped[str | None] = mapped_column(String(16))
    # schema 4: seconds of each phase of the load, read from the server's log
    load_phases: Mapped[dict[str, Any] | None] = mapped_column(JSON)
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
    # schema 3: a level the capacity search measured, not one of benchmark.concurrency's
    capacity_search: Mapped[bool | None] = mapped_column(Boolean, default=False)


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


class MetaRow(Base):
    """Facts about the database itself: ``schema_version`` (tuner/storage/schema.py)."""

    __tablename__ = "tuner_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class ClaimRow(Base):
    """A decision only one worker may act on: the unique key makes the INSERT the vote.

    ``kind`` is what is claimed (``baseline``, ``confirm``, ``simplify``, ``retry``) and
    ``key`` which one (a baseline slot, a configuration and its launch count, a trial).
    The worker whose INSERT goes through acts; every other one sees the conflict. A claim
    on a launch whose holder died before queueing it is handed over (tuner/study/run/queue.py
    ``Claims``): the one UPDATE that still finds the dead holder in ``worker`` wins.
    """

    __tablename__ = "tuner_claims"
    __table_args__ = (UniqueConstraint("study", "kind", "key", name="uq_tuner_claims"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study: Mapped[str] = mapped_column(String(512))
    kind: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(255))
    worker: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class WorkerRow(Base):
    """One `tuner run` process on a study: its host, its hardware, and its heartbeat.

    ``heartbeat_at`` is written with the database's clock (hosts' clocks may disagree)
    every few seconds by a background thread while the worker runs; a RUNNING trial of a
    worker whose heartbeat is older than the grace period is failed and run again.
    """

    __tablename__ = "tuner_workers"
    __table_args__ = (UniqueConstraint("study", "worker", name="uq_tuner_workers"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    study: Mapped[str] = mapped_column(String(512), index=True)
    worker: Mapped[str] = mapped_column(String(255))  # host:pid:start (recovery.worker_id)
    host: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(32))
    hardware: Mapped[dict[str, Any]] = mapped_column(JSON)  # the fingerprint's facts
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    stopped_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


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


def request_row(record: RequestRecord) -> dict[str, Any]:
    """A measured request as its ``tuner_requests`` row (without the level it belongs to)."""
    return dict(
        idx=record.index,
        start_s=record.start_s,
        ttft_s=record.ttft_s,
        e2el_s=record.e2el_s,
        itl_s=list(record.itl_s),
        prompt_tokens=record.prompt_tokens,
        output_tokens=record.output_tokens,
        reasoning_tokens=record.reasoning_tokens,
        tokens_estimated=record.tokens_estimated,
        error=record.error,
    )
