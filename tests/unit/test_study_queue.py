"""tuner.study.queue and tuner.study.storage: the baseline is queued once in all; SQLite waits."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState
from sqlalchemy import text

from tests.integration.sweep_helpers import write_space
from tuner.space.spec import load_space
from tuner.storage.store import SQLITE_BUSY_TIMEOUT_S
from tuner.study import attrs
from tuner.study.queue import enqueue_baselines
from tuner.study.storage import open_storage


def _baselines(study: optuna.Study) -> list[TrialState]:
    return [t.state for t in study.get_trials() if t.user_attrs.get(attrs.ROLE) == attrs.BASELINE]


def test_a_running_baseline_counts_so_no_second_worker_queues_another(tmp_path: Path) -> None:
    space = load_space(write_space(tmp_path, stop={"baseline_launches": 2}))
    storage = open_storage(f"sqlite:///{tmp_path}/db.sqlite")
    study = optuna.create_study(storage=storage, study_name="fast", direction="maximize")
    enqueue_baselines(study, space)
    assert _baselines(study) == [TrialState.WAITING, TrialState.WAITING]
    first = study.ask()
    study.tell(first, 80.0)
    study.ask()  # the second baseline is being measured by a worker
    enqueue_baselines(study, space)  # as a second worker starting now does
    assert _baselines(study) == [TrialState.COMPLETE, TrialState.RUNNING]


def test_optunas_sqlite_engine_waits_as_long_as_tuners(tmp_path: Path) -> None:
    storage = open_storage(f"sqlite:///{tmp_path}/db.sqlite")
    assert isinstance(storage, optuna.storages.RDBStorage)
    with storage.engine.connect() as conn:
        waited_ms = conn.execute(text("PRAGMA busy_timeout")).scalar()
    assert waited_ms == SQLITE_BUSY_TIMEOUT_S * 1000
