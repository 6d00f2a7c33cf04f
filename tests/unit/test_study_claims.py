"""tuner.study.run.queue.Claims: a launch claim expires with its dead holder unless the launch
was queued (docs/distributed.md, "How the workers share the work")."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import optuna
import psutil
import pytest
import yaml
from sqlalchemy import update

from tests.fakes import FakeRunner
from tests.integration.sweep_helpers import write_space
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.storage.tables import WorkerRow
from tuner.study import attrs
from tuner.study.run import recovery
from tuner.study.run.optuna_rdb import open_rdb
from tuner.study.run.queue import LAUNCH_CLAIMS, Claims, claim_and_enqueue
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.study.run.workers import FINGERPRINT_CLAIM, worker_id

GRACE_S = 30.0
GONE_HERE = f"{socket.gethostname()}:2147483646:1"  # this host, no such process
SILENT = "gpu-c:4343:1"  # another host, no heartbeat for 600 s
STOPPED = "gpu-d:4444:1"  # another host, exited
BEATING = "gpu-b:4242:1"  # another host, beating
UNKNOWN = "gpu-e:4545:1"  # another host, no row (a tuner before schema 2)
ME, OTHER = "gpu-x:1:1", "gpu-y:2:2"  # the workers that find the claim


def _study(tmp_path: Path, url: str | None = None) -> tuple[optuna.Study, Store]:
    url = url or f"sqlite:///{tmp_path}/c.db"
    store = Store(url)
    study = optuna.create_study(storage=open_rdb(url), study_name="c", direction="maximize")
    for worker, silent_s, stopped in (
        (SILENT, 600, False),
        (STOPPED, 0, True),
        (BEATING, 0, False),
    ):
        store.register_worker("c", worker, host=worker.split(":")[0], fingerprint="f", hardware={})
        if stopped:
            store.heartbeat("c", worker, stopped=True)
        then = store.db_now() - dt.timedelta(seconds=silent_s)
        with store.session() as s, s.begin():
            s.execute(update(WorkerRow).where(WorkerRow.worker == worker).values(heartbeat_at=then))
    return study, store


def _claims(store: Store, study: optuna.Study, worker: str = ME) -> Claims:
    return Claims(store, "c", worker, queued_in=study, grace_s=GRACE_S)


def _queue(tmp_path: Path, study: optuna.Study, claims: Claims, key: str = "1") -> bool:
    spec = load_space(write_space(tmp_path)).spec
    params = {name: "default" for name in spec.params}
    return claim_and_enqueue(study, claims, "baseline", key, spec, params, attrs.BASELINE)


@pytest.fixture
def live_here() -> Iterator[str]:
    """The worker id of a process of this host that runs."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = round(psutil.Process(proc.pid).create_time() * 100)
        yield f"{socket.gethostname()}:{proc.pid}:{start}"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("holder", [GONE_HERE, SILENT, STOPPED])
def test_a_dead_holders_claim_on_a_launch_never_queued_is_taken_over(
    tmp_path: Path, holder: str
) -> None:
    study, store = _study(tmp_path)
    assert store.claim("c", "baseline", "1", holder)  # then it died before queueing
    assert _queue(tmp_path, study, _claims(store, study))
    assert store.claim_holder("c", "baseline", "1") == ME
    (trial,) = study.get_trials()
    assert trial.user_attrs[attrs.CLAIM] == "baseline:1"
    # Taken over once: the next worker finds a live holder whose launch is queued.
    assert not _queue(tmp_path, study, _claims(store, study, OTHER))
    assert len(study.get_trials()) == 1


@pytest.mark.parametrize("holder", [GONE_HERE, SILENT, STOPPED])
def test_a_dead_holders_claim_whose_launch_was_queued_is_not_taken(
    tmp_path: Path, holder: str
) -> None:
    study, store = _study(tmp_path)
    assert _queue(tmp_path, study, _claims(store, study, holder))  # queued, then it died
    assert not _queue(tmp_path, study, _claims(store, study))
    assert store.claim_holder("c", "baseline", "1") == holder
    assert len(study.get_trials()) == 1


@pytest.mark.parametrize("holder", ["live here", BEATING, UNKNOWN])
def test_a_live_holders_claim_is_not_taken(tmp_path: Path, holder: str, live_here: str) -> None:
    holder = live_here if holder == "live here" else holder
    study, store = _study(tmp_path)
    assert store.claim("c", "baseline", "1", holder)  # it is about to queue the launch
    assert not _queue(tmp_path, study, _claims(store, study))
    assert store.claim_holder("c", "baseline", "1") == holder
    assert study.get_trials() == []


def test_only_launch_claims_expire_and_only_with_the_study_to_read(tmp_path: Path) -> None:
    study, store = _study(tmp_path)
    assert recovery.RETRY_CLAIM in LAUNCH_CLAIMS and FINGERPRINT_CLAIM not in LAUNCH_CLAIMS
    assert store.claim("c", FINGERPRINT_CLAIM, "study", GONE_HERE)
    assert not _claims(store, study).take(FINGERPRINT_CLAIM, "study")  # never expires
    assert store.claim("c", "confirm", "abc:1", GONE_HERE)
    assert not Claims(store, "c", ME, grace_s=GRACE_S).take("confirm", "abc:1")  # no study
    assert _claims(store, study).take("confirm", "abc:1")
    assert store.claim_holder("c", FINGERPRINT_CLAIM, "study") == GONE_HERE


def test_a_claim_is_taken_over_only_from_the_holder_it_was_read_from(tmp_path: Path) -> None:
    _, store = _study(tmp_path)
    assert store.claim("c", "simplify", "h", GONE_HERE)
    assert store.take_over_claim("c", "simplify", "h", holder=GONE_HERE, worker=ME)
    assert not store.take_over_claim("c", "simplify", "h", holder=GONE_HERE, worker=OTHER)
    assert not store.take_over_claim("c", "simplify", "nobody", holder=GONE_HERE, worker=ME)
    assert store.claimed("c", "simplify") == {"h": ME}


def two_take_over_at_once(tmp_path: Path, url: str | None = None) -> list[bool]:
    """Two workers, each with a Store of its own, find the same expired claim and reach
    its takeover together (a barrier before each UPDATE): what each one's take returns."""
    study, store = _study(tmp_path, url)
    assert store.claim("c", "baseline", "1", GONE_HERE)
    barrier = threading.Barrier(2, timeout=30)
    won: dict[str, bool] = {}

    def worker(name: str) -> None:
        own = Store(store.url)
        take_over = own.take_over_claim

        def at_once(*args: object, **kwargs: str) -> bool:
            barrier.wait()  # both have read the holder, found it dead and nothing queued
            return take_over(*args, **kwargs)  # type: ignore[arg-type]

        own.take_over_claim = at_once  # type: ignore[method-assign]
        won[name] = _claims(own, study, name).take("baseline", "1")

    threads = [threading.Thread(target=worker, args=(name,)) for name in (ME, OTHER)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert store.claim_holder("c", "baseline", "1") in {n for n, w in won.items() if w}
    return [won[ME], won[OTHER]]


def test_two_workers_taking_over_the_same_expired_claim_one_wins(tmp_path: Path) -> None:
    assert sorted(two_take_over_at_once(tmp_path)) == [False, True]


def test_a_worker_killed_after_claiming_the_baseline_leaves_it_to_the_next(
    tmp_path: Path,
) -> None:
    # A worker wins both baseline slots and is killed before it queues them. Before
    # claims expired the next worker found both slots claimed and measured no baseline.
    path = tmp_path / "d.yaml"
    space = {
        "study": "d",
        "server": {"command": ["srv", "--port", "{port}"]},
        "params": {"P": {"env": "P", "choices": ["default", "a", "b"]}},
        "stop": {"patience": 6, "baseline_launches": 2, "confirmations": 1},
    }
    path.write_text(yaml.safe_dump(space))
    storage = f"sqlite:///{tmp_path}/d.db"
    code = (
        "import sys, time; from tuner.storage import Store; "
        "import socket; from tuner.study.run.workers import worker_id; store = Store(sys.argv[1]); "
        "store.register_worker('d', worker_id(), host=socket.gethostname(), fingerprint='f', "
        "hardware={}); "
        "[store.claim('d', 'baseline', slot, worker_id()) for slot in ('0', '1')]; "
        "print(worker_id(), flush=True); time.sleep(60)"
    )
    victim = subprocess.Popen(
        [sys.executable, "-c", code, storage], stdout=subprocess.PIPE, text=True
    )
    try:
        assert victim.stdout is not None
        dead = victim.stdout.readline().strip()
    finally:
        victim.kill()
        victim.wait()
    assert Store(storage).claimed("d", "baseline") == {"0": dead, "1": dead}

    runner = FakeRunner(Store(storage), "d", speed=lambda p: 100.0)
    run_sweep(load_space(path), RunRequest(storage, 3), Seams(runner=runner))
    assert [role for role, _ in runner.launched[:2]] == ["baseline", "baseline"]
    assert Store(storage).claimed("d", "baseline") == {"0": worker_id(), "1": worker_id()}
