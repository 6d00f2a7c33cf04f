"""This process as one worker of a study: checked against its peers, registered, beating.

Before a worker touches a study it joins it (``WorkerSession.join``):

- its host's hardware fingerprint (tuner/telemetry/fingerprint.py) must be the study's:
  the first worker claims the study for its fingerprint (a ``tuner_claims`` row, so two
  first workers cannot both win) and a worker on different hardware is refused with the
  differences and the fix (``--split-by-host``: a study per fingerprint);
- on SQLite, no other worker may be live on the study: SQLite has one writer, and the
  message recommends PostgreSQL;
- then its row goes into ``tuner_workers`` and a daemon thread renews its heartbeat every
  ``interval_s`` by the database's clock until the worker leaves. A trial RUNNING under a
  worker whose heartbeat is older than ``grace_s`` belongs to a dead worker
  (tuner/study/run/recovery.py fails it and queues its configuration again).

optuna's own heartbeat (``RDBStorage(heartbeat_interval=...)``) beats per trial and
fails stale trials without a reason or a way to report the server left behind; this one
beats per worker, so the same row also answers "who works on this study, where, on what".
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType

import psutil
from optuna.trial import FrozenTrial
from sqlalchemy.exc import SQLAlchemyError

from tuner.errors import ConfigError
from tuner.launcher import procfs
from tuner.secrets import safe_url
from tuner.storage import Store
from tuner.storage.tables import WorkerRow
from tuner.telemetry.fingerprint import Fingerprint

log = logging.getLogger(__name__)

HEARTBEAT_ENV = "TUNER_HEARTBEAT_S"
"""Seconds between a worker's heartbeats (default 30)."""
GRACE_ENV = "TUNER_HEARTBEAT_GRACE_S"
"""Seconds without a heartbeat after which a worker on another host counts as dead
(default 120: four missed beats; a database that stalls for a minute loses nobody)."""
FINGERPRINT_CLAIM = "fingerprint"


@dataclass(frozen=True)
class Heartbeat:
    """How often workers beat, and how long a silent one is given before it counts as dead."""

    interval_s: float = 30.0
    grace_s: float = 120.0

    @classmethod
    def from_env(cls) -> Heartbeat:
        interval = _env_seconds(HEARTBEAT_ENV, cls.interval_s)
        grace = _env_seconds(GRACE_ENV, max(cls.grace_s, 4 * interval))
        if grace <= interval:
            raise ConfigError(
                f"{GRACE_ENV}={grace:g} must be longer than {HEARTBEAT_ENV}={interval:g}: "
                "a live worker would be taken for dead between two heartbeats"
            )
        return cls(interval_s=interval, grace_s=grace)


def _env_seconds(name: str, default: float) -> float:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ConfigError(f"environment variable {name}={text!r}: give a number of seconds > 0")
    return value


def worker_id() -> str:
    """This tuner process as other workers and later runs see it: ``host:pid:start``.

    The start time (psutil's create time, in centiseconds) tells a live worker from
    an unrelated process that got its pid after it died.
    """
    start = round(psutil.Process().create_time() * 100)
    return f"{socket.gethostname()}:{os.getpid()}:{start}"


def worker_alive(worker: str) -> bool:
    """Whether the tuner process named ``host:pid:start`` (see worker_id) still runs.

    This process never counts: a resumed run recovers its own earlier incarnation. A
    worker that exited and waits to be reaped (a zombie) is gone, not alive.
    """
    try:
        _, pid_text, start_text = worker.rsplit(":", 2)
        pid, start = int(pid_text), int(start_text)
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        proc = psutil.Process(pid)
        running: bool = proc.is_running()
        same = abs(round(proc.create_time() * 100) - start) <= 100
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    stat = procfs.read_stat(pid)
    return running and same and stat is not None and not stat.zombie


def worker_is_live(row: WorkerRow, now: dt.datetime, grace_s: float) -> bool:
    """Whether a registered worker still runs: on this host by its process, elsewhere by
    its heartbeat."""
    if row.stopped_at is not None:
        return False
    if row.host == socket.gethostname():
        return worker_alive(row.worker)
    return heartbeat_age(row, now) <= grace_s


def heartbeat_age(row: WorkerRow, now: dt.datetime) -> float:
    from tuner.storage.store import as_utc  # noqa: PLC0415 - one helper, not the module

    return (now - as_utc(row.heartbeat_at)).total_seconds()


class DeadWorkers:
    """Why a worker counts as dead (None: alive, or nothing says otherwise), as of now.

    One rule for everything a dead worker leaves: its RUNNING trials (tuner/study/run/recovery.py)
    and its claims on launches it never queued (tuner/study/run/queue.py ``Claims``). On this
    host a worker is dead when its process is gone; on another host when its row says it
    exited or its heartbeat is older than ``grace_s``. This process is never dead, and a
    worker of another host with no row (a tuner before schema 2) is not known to be.
    """

    def __init__(self, store: Store, study: str, grace_s: float) -> None:
        self.host = socket.gethostname()
        self.me = worker_id()
        self.grace_s = grace_s
        self.now = store.db_now()
        self.rows: Mapping[str, WorkerRow] = {w.worker: w for w in store.workers(study)}

    def why(self, worker: str) -> str | None:
        if not worker or worker == self.me:
            return None
        worker_host = worker.rsplit(":", 2)[0]
        if worker_host == self.host:
            if worker_alive(worker):
                return None
            return f"its worker {worker} on this host is gone"
        row = self.rows.get(worker)
        if row is None:
            return None
        if row.stopped_at is not None:
            return f"its worker {worker} exited without finishing it"
        age = heartbeat_age(row, self.now)
        if age <= self.grace_s:
            return None
        return (
            f"worker {worker} sent no heartbeat for {age:.0f} s (grace {self.grace_s:g} s): "
            "killed, or its host lost"
        )

    def orphaned(self, trial: FrozenTrial) -> str | None:
        """A RUNNING trial no worker ever named itself on: its worker died as it began it.

        run_trial names its worker first thing, so a trial without one for longer than
        the grace period has none. optuna stamps the start with the starting host's
        local clock: this is the one age not measured by the database's clock.
        """
        if trial.datetime_start is None:
            return None
        age = (dt.datetime.now() - trial.datetime_start).total_seconds()
        if age <= self.grace_s:
            return None
        return f"no worker named itself on it in {age:.0f} s: its worker died as it began it"


class WorkerSession:
    """Join a study as a worker, beat while working, leave (a context manager)."""

    def __init__(
        self,
        store: Store,
        study: str,
        fingerprint: Fingerprint,
        heartbeat: Heartbeat | None = None,
    ) -> None:
        self.store = store
        self.study = study
        self.fingerprint = fingerprint
        self.heartbeat = heartbeat or Heartbeat.from_env()
        self.worker = worker_id()
        self.host = socket.gethostname()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def join(self) -> WorkerSession:
        """Refuse a worker that cannot share the study, else register it and start beating."""
        if self.store.engine.dialect.name == "sqlite":
            self._refuse_second_sqlite_worker()
        self._check_fingerprint()
        self.store.register_worker(
            self.study,
            self.worker,
            host=self.host,
            fingerprint=self.fingerprint.digest,
            hardware=dict(self.fingerprint.facts),
        )
        self.store.fingerprint = self.fingerprint.digest
        self._thread = threading.Thread(
            target=self._beat, name=f"tuner-heartbeat-{self.study}", daemon=True
        )
        self._thread.start()
        return self

    def leave(self) -> None:
        """Stop beating and mark this worker as exited cleanly."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
            try:
                self.store.heartbeat(self.study, self.worker, stopped=True)
            except SQLAlchemyError as exc:  # the database is gone: the grace period covers it
                log.warning("could not record that worker %s stopped: %s", self.worker, exc)

    def __enter__(self) -> WorkerSession:
        return self.join()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.leave()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat.interval_s):
            try:
                self.store.heartbeat(self.study, self.worker)
            except SQLAlchemyError as exc:  # a blip of the database: try again next beat
                log.warning("heartbeat of worker %s failed: %s", self.worker, exc)

    def _refuse_second_sqlite_worker(self) -> None:
        now = self.store.db_now()
        for row in self.store.workers(self.study):
            if row.worker != self.worker and worker_is_live(row, now, self.heartbeat.grace_s):
                raise ConfigError(
                    f"{safe_url(self.store.url)}: another tuner ({row.worker}) is working on "
                    f"study {self.study!r} in this SQLite database. SQLite takes one worker "
                    "per study; for several workers on one study use PostgreSQL: "
                    "--storage postgresql+psycopg://USER@HOST/DB (docs/distributed.md). "
                    "Or wait for the other run to finish."
                )

    def _check_fingerprint(self) -> None:
        digest = self.fingerprint.digest
        if self.store.claim(self.study, FINGERPRINT_CLAIM, "study", digest):
            return  # the first worker: the study is this hardware's from now on
        owner = self.store.claimed(self.study, FINGERPRINT_CLAIM).get("study")
        if owner is None or owner == digest:
            return
        theirs = next(
            (r for r in self.store.workers(self.study) if r.fingerprint == owner),
            None,
        )
        if theirs is not None:
            differences = "; ".join(
                self.fingerprint.differences(Fingerprint(facts=theirs.hardware))
            )
            who = f"host {theirs.host} ({Fingerprint(facts=theirs.hardware).describe()})"
        else:
            differences, who = "", f"fingerprint {owner}"
        raise ConfigError(
            f"study {self.study!r} runs on other hardware: {who}; this host "
            f"{self.host} is {self.fingerprint.describe()} (fingerprint {digest}"
            f"{': ' + differences if differences else ''}). Launches on different hardware "
            "are not one population. Run this host on a study of its own with "
            "--split-by-host (the study becomes NAME@FINGERPRINT), or pass another --study."
        )
