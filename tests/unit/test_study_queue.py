"""tuner.study.run.queue and tuner.study.run.optuna_rdb: the baseline is queued once in all
(the policy's baselines, claimed as tuner/study/run/apply.py queues them); SQLite waits."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState
from sqlalchemy import text

from tests.integration.sweep_helpers import write_space
from tuner.space.spec import Space, load_space
from tuner.storage import Store
from tuner.storage.store import SQLITE_BUSY_TIMEOUT_S
from tuner.study import attrs
from tuner.study.policy.next_launch import baselines
from tuner.study.policy.snapshot import Snapshot
from tuner.study.run.apply import queue_launch
from tuner.study.run.optuna_rdb import open_rdb
from tuner.study.run.queue import Claims, claim_and_enqueue
from tuner.study.state import StudyState, TrialView


def _baselines(study: optuna.Study) -> list[TrialState]:
    return [t.state for t in study.get_trials() if t.user_attrs.get(attrs.ROLE) == attrs.BASELINE]


def enqueue_baselines(study: optuna.Study, space: Space, claims: Claims | None = None) -> None:
    """The baseline launches the policy decides at the opening, queued (claimed) as apply does."""
    trials = tuple(TrialView.of(t.number, t.state.name, t.user_attrs) for t in study.get_trials())
    snap = Snapshot(spec=space.spec, facts=None, state=StudyState(), trials=trials, budget=9)  # type: ignore[arg-type]
    for launch in baselines(snap):
        queue_launch(study, space.spec, launch, claims)


def test_a_running_baseline_counts_so_no_second_worker_queues_another(tmp_path: Path) -> None:
    space = load_space(write_space(tmp_path, stop={"baseline_launches": 2}))
    storage = open_rdb(f"sqlite:///{tmp_path}/db.sqlite")
    study = optuna.create_study(storage=storage, study_name="fast", direction="maximize")
    enqueue_baselines(study, space)
    assert _baselines(study) == [TrialState.WAITING, TrialState.WAITING]
    first = study.ask()
    study.tell(first, 80.0)
    study.ask()  # the second baseline is being measured by a worker
    enqueue_baselines(study, space)  # as a second worker starting now does
    assert _baselines(study) == [TrialState.COMPLETE, TrialState.RUNNING]


def test_optunas_sqlite_engine_waits_as_long_as_tuners(tmp_path: Path) -> None:
    storage = open_rdb(f"sqlite:///{tmp_path}/db.sqlite")
    assert isinstance(storage, optuna.storages.RDBStorage)
    with storage.engine.connect() as conn:
        waited_ms = conn.execute(text("PRAGMA busy_timeout")).scalar()
    assert waited_ms == SQLITE_BUSY_TIMEOUT_S * 1000


def test_each_baseline_carries_the_slot_it_was_claimed_under(tmp_path: Path) -> None:
    space = load_space(write_space(tmp_path, stop={"baseline_launches": 2}))
    url = f"sqlite:///{tmp_path}/db.sqlite"
    study = optuna.create_study(storage=open_rdb(url), study_name="fast", direction="maximize")
    store = Store(url)
    enqueue_baselines(study, space, Claims(store, "fast", "gpu-a:1:1"))
    assert [t.user_attrs[attrs.CLAIM] for t in study.get_trials()] == ["baseline:0", "baseline:1"]
    assert store.claimed("fast", "baseline") == {"0": "gpu-a:1:1", "1": "gpu-a:1:1"}


def test_claim_and_enqueue_queues_only_what_it_won_each_launch_carrying_the_claim(
    tmp_path: Path,
) -> None:
    space = load_space(write_space(tmp_path))
    url = f"sqlite:///{tmp_path}/db.sqlite"
    study = optuna.create_study(storage=open_rdb(url), study_name="fast", direction="maximize")
    store = Store(url)
    params = {name: "default" for name in space.spec.params}
    mine, theirs = Claims(store, "fast", "gpu-a:1:1"), Claims(store, "fast", "gpu-b:2:2")
    won = claim_and_enqueue(
        study,
        mine,
        "simplify",
        "h",
        space.spec,
        params,
        "simplify",
        {attrs.CONFIG: "c"},
        launches=2,
    )
    assert won
    lost = claim_and_enqueue(study, theirs, "simplify", "h", space.spec, params, "simplify")
    assert not lost  # a live holder's claim: the other worker queues nothing
    queued = study.get_trials()
    assert [t.user_attrs[attrs.CLAIM] for t in queued] == ["simplify:h", "simplify:h"]
    assert all(t.user_attrs[attrs.CONFIG] == "c" for t in queued)
    assert all(t.user_attrs[attrs.ROLE] == "simplify" for t in queued)
    seen: list[object] = []
    assert not theirs.take_and_queue("simplify", "h", seen.append)
    assert theirs.take_and_queue("simplify", "other", seen.append)
    assert seen == [{attrs.CLAIM: "simplify:other"}]


def test_without_claims_a_claimed_launch_is_queued_and_still_carries_its_claim(
    tmp_path: Path,
) -> None:
    space = load_space(write_space(tmp_path))
    study = optuna.create_study(
        storage=open_rdb(f"sqlite:///{tmp_path}/db.sqlite"), direction="maximize"
    )
    params = {name: "default" for name in space.spec.params}
    assert claim_and_enqueue(study, None, "confirm", "abc:0", space.spec, params, "confirm")
    assert study.get_trials()[0].user_attrs[attrs.CLAIM] == "confirm:abc:0"
