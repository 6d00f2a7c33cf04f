"""tuner.study.run.recovery: a worker on another host that stopped beating loses its trial."""

from __future__ import annotations

import datetime as dt
import socket
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState
from sqlalchemy import update

from tuner.events import SweepObserver
from tuner.storage import Store
from tuner.storage.tables import WorkerRow
from tuner.study import attrs
from tuner.study.run.optuna_rdb import open_rdb
from tuner.study.run.recovery import RETRY_CLAIM, recover_interrupted
from tuner.study.run.workers import Heartbeat, worker_id

REMOTE = "gpu-b:4242:170000000000"
HEARTBEAT = Heartbeat(interval_s=1.0, grace_s=30.0)


class Notes(SweepObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def _remote_trial(
    tmp_path: Path, silent_for_s: float, *, url: str | None = None, name: str = "s"
) -> tuple[optuna.Study, Store]:
    """A study whose trial 0 (a confirmation) RUNS on gpu-b, silent for ``silent_for_s``.

    SQLite by default; tests/postgres/ passes a PostgreSQL ``url``.
    """
    url = url or f"sqlite:///{tmp_path}/e.db"
    store = Store(url)
    study = optuna.create_study(storage=open_rdb(url), study_name=name, direction="maximize")
    store.register_worker(name, REMOTE, host="gpu-b", fingerprint="f", hardware={})
    then = store.db_now() - dt.timedelta(seconds=silent_for_s)
    with store.session() as s, s.begin():
        s.execute(update(WorkerRow).where(WorkerRow.study == name).values(heartbeat_at=then))
    study.enqueue_trial(
        {"NCCL_PROTO": "LL"},
        user_attrs={attrs.ROLE: attrs.CONFIRM, attrs.PARAMS: {"NCCL_PROTO": "LL"}},
    )
    trial = study.ask()
    trial.suggest_categorical("NCCL_PROTO", ["default", "LL"])
    trial.set_user_attr(attrs.WORKER, REMOTE)
    trial.set_user_attr(attrs.CONFIG, "cfg")
    trial.set_user_attr(attrs.LAUNCHED, True)
    store.add_launch(
        study=name,
        trial_number=0,
        role="confirm",
        config_hash="cfg",
        params={},
        env={},
        argv=[],
        host="gpu-b",
        pid=777,
    )
    return study, store


def _recover(study: optuna.Study, store: Store, notes: Notes) -> list[int]:
    return recover_interrupted(
        study, open_rdb(store.url), store, notes, heartbeat=HEARTBEAT, reported=set()
    )


def test_a_silent_workers_trial_fails_with_the_reason_and_runs_again(tmp_path: Path) -> None:
    study, store = _remote_trial(tmp_path, silent_for_s=600)
    notes = Notes()
    assert _recover(study, store, notes) == [0]
    dead, again = study.get_trials()
    assert dead.state == TrialState.FAIL
    assert "sent no heartbeat for 6" in dead.user_attrs[attrs.REASON]
    assert "grace 30 s" in dead.user_attrs[attrs.REASON]
    assert again.state == TrialState.WAITING
    assert again.user_attrs[attrs.RETRY_OF] == 0
    assert again.user_attrs[attrs.CLAIM] == "retry:0"  # the claim it was queued under
    assert again.user_attrs[attrs.ROLE] == attrs.CONFIRM
    assert again.user_attrs[attrs.CONFIG] == "cfg"
    assert again.system_attrs["fixed_params"] == {"NCCL_PROTO": "LL"}
    # Its server lives on gpu-b: named, never touched (the launch row stays running).
    assert any("server pid 777 of trial 0 on host gpu-b" in line for line in notes.lines)
    assert store.launches("s")[0].status == "running"
    # Another worker (or a second look) finds nothing more to do: queued once in all.
    assert _recover(study, store, Notes()) == []
    assert len(study.get_trials()) == 2


def test_a_retry_claimed_by_a_worker_that_died_before_queueing_it_is_taken_over(
    tmp_path: Path,
) -> None:
    study, store = _remote_trial(tmp_path, silent_for_s=600)
    gone = f"{socket.gethostname()}:2147483646:1"  # this host, no such process
    assert store.claim("s", RETRY_CLAIM, "0", gone)  # it found trial 0 and died there
    assert _recover(study, store, Notes()) == [0]
    dead, again = study.get_trials()
    assert dead.state == TrialState.FAIL and again.state == TrialState.WAITING
    assert again.user_attrs[attrs.CLAIM] == "retry:0"
    assert store.claimed("s", RETRY_CLAIM) == {"0": worker_id()}


def test_a_worker_within_its_grace_period_keeps_its_trial(tmp_path: Path) -> None:
    study, store = _remote_trial(tmp_path, silent_for_s=5)
    notes = Notes()
    assert _recover(study, store, notes) == []
    assert [t.state for t in study.get_trials()] == [TrialState.RUNNING]
    assert notes.lines == []


def test_a_trial_no_worker_ever_named_itself_on_is_recovered_after_the_grace(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/e.db"
    store = Store(url)
    study = optuna.create_study(storage=open_rdb(url), study_name="s", direction="maximize")
    study.enqueue_trial(
        {"NCCL_PROTO": "LL"},
        user_attrs={attrs.ROLE: attrs.CONFIRM, attrs.PARAMS: {"NCCL_PROTO": "LL"}},
    )
    study.ask()  # popped by a worker that died before it wrote its name
    # A grace of 2 s: on a loaded machine the first look may come half a second late.
    quick = Heartbeat(interval_s=0.1, grace_s=2.0)

    def recover() -> list[int]:
        return recover_interrupted(
            study, open_rdb(url), store, Notes(), heartbeat=quick, reported=set()
        )

    assert recover() == []  # within the grace: it may be starting right now
    time.sleep(2.2)
    assert recover() == [0]
    dead, again = study.get_trials()
    assert "no worker named itself on it" in dead.user_attrs[attrs.REASON]
    assert again.state == TrialState.WAITING and again.user_attrs[attrs.RETRY_OF] == 0
