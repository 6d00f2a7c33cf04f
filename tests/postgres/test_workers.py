"""Workers that cooperate, die and differ, on the real PostgreSQL (docs/distributed.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState
from sqlalchemy import create_engine, text

from tests.integration.sweep_helpers import write_space
from tuner.storage import Store
from tuner.storage.schema import SCHEMA_VERSION
from tuner.study import attrs
from tuner.study.run.queue import Claims
from tuner.study.run.workers import FINGERPRINT_CLAIM

pytestmark = [pytest.mark.postgres, pytest.mark.alone, pytest.mark.timeout(300)]

# A space of 36 configurations, so that 16 launches neither exhaust it nor plateau.
PARAMS = {
    "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL128", "Simple"]},
    "NCCL_ALGO": {"env": "NCCL_ALGO", "choices": ["default", "allreduce:ring", "allreduce:tree"]},
    "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
}
STOP = {"baseline_launches": 2, "patience": 30, "futility": 0, "confirmations": 1}


def _tuner(cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TUNER_HEARTBEAT_S": "1", "TUNER_HEARTBEAT_GRACE_S": "5"}
    return subprocess.Popen(
        [sys.executable, "-m", "tuner", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _run(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = _tuner(cwd, *args)
    out, _ = proc.communicate(timeout=timeout)
    # rich wraps long lines to the terminal's width: compare words, not line breaks
    return subprocess.CompletedProcess(proc.args, proc.returncode, " ".join(out.split()), "")


def _launched(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.trials if t.user_attrs.get(attrs.LAUNCHED)]


def test_two_workers_of_8_launches_share_the_baseline_and_the_numbers(
    tmp_path: Path, pg_storage: str
) -> None:
    path = write_space(tmp_path, name="pair", params=PARAMS, stop=STOP)
    # 20, each worker 8 of them: the study ends on the workers' own budgets, or earlier,
    # once the final comparison of the best-looking change (nothing matters here) is done.
    run = ["run", "--space", str(path), "--trials", "20", "--worker-trials", "8"]
    workers = [
        _tuner(tmp_path, *run, "--storage", pg_storage, "--runs-dir", str(tmp_path / f"r{i}"))
        for i in range(2)
    ]
    outputs = [w.communicate(timeout=240)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], "\n\n".join(outputs)

    study = optuna.load_study(study_name="pair", storage=pg_storage)
    launched = _launched(study)
    # Nothing is left running. A launch one worker queued (a confirmation, a proposal) just
    # before both used their --worker-trials may wait: a resumed run launches it first.
    assert not [t.number for t in study.trials if t.state == TrialState.RUNNING]
    waiting = [t for t in study.trials if t.state == TrialState.WAITING]
    assert all(attrs.ROLE in t.user_attrs for t in waiting), [t.user_attrs for t in waiting]
    by_worker = Counter(t.user_attrs[attrs.WORKER] for t in launched)
    assert len(by_worker) == 2 and max(by_worker.values()) <= 8, by_worker  # --worker-trials 8
    numbers = [t.number for t in study.trials]
    assert len(numbers) == len(set(numbers))
    rows = Store(pg_storage).launches("pair")
    assert len({r.trial_number for r in rows}) == len(rows) == sum(by_worker.values())
    baselines = [t for t in study.trials if t.user_attrs.get(attrs.ROLE) == attrs.BASELINE]
    assert len(baselines) == 2, "one baseline pair for the whole study"
    assert {r.host for r in rows} == {rows[0].host} and rows[0].fingerprint is not None
    # Every confirmation was queued by exactly one worker's claim.
    store = Store(pg_storage)
    confirms = [t for t in study.trials if t.user_attrs.get(attrs.ROLE) == attrs.CONFIRM]
    assert len(confirms) == len(store.claimed("pair", "confirm"))
    for out in outputs:  # each says why it stopped
        assert any(why in out for why in ("budget", "plateau", "futile", "stopped by")), out

    best = _run(tmp_path, "best", "--storage", pg_storage, "--study", "pair")
    assert best.returncode in (0, 5), best.stdout  # 5: the answer is "not settled"
    assert f"Hosts: {rows[0].host} (no GPU," in best.stdout


def test_a_worker_killed_mid_trial_loses_it_to_the_other_who_runs_it_again(
    tmp_path: Path, pg_storage: str
) -> None:
    path = write_space(
        tmp_path,
        name="kill",
        params=PARAMS,
        stop=STOP,
        benchmark={"max_tokens": 400, "requests": 4, "rounds": 3},
    )
    run = ["run", "--space", str(path), "--trials", "6", "--storage", pg_storage]
    victim = _tuner(tmp_path, *run, "--runs-dir", str(tmp_path / "victim"))
    survivor = _tuner(tmp_path, *run, "--runs-dir", str(tmp_path / "survivor"))
    try:
        number = _wait_for_benchmarking_trial_of(victim.pid, pg_storage)
        victim.kill()  # kill -9: nothing of tuner's own cleanup runs
        victim.wait(timeout=10)
        out, _ = survivor.communicate(timeout=240)
    finally:
        for proc in (victim, survivor):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert survivor.returncode == 0, out

    study = optuna.load_study(study_name="kill", storage=pg_storage)
    dead = study.trials[number]
    assert dead.state == TrialState.FAIL
    assert "is gone" in dead.user_attrs[attrs.REASON], dead.user_attrs
    retries = [t for t in study.trials if t.user_attrs.get(attrs.RETRY_OF) == number]
    assert len(retries) == 1, "queued again once"
    (retry,) = retries
    assert retry.state == TrialState.COMPLETE, retry
    assert retry.user_attrs[attrs.CONFIG] == dead.user_attrs[attrs.CONFIG]
    assert retry.user_attrs[attrs.ROLE] == dead.user_attrs[attrs.ROLE]
    assert retry.user_attrs[attrs.WORKER] != dead.user_attrs[attrs.WORKER]
    assert f"trial {number} was interrupted" in out
    # The killed worker's server ran on this host: the survivor stopped it.
    launch = Store(pg_storage).launch_for_trial("kill", number)
    assert launch is not None and (launch.status, launch.reason) == ("failed", "interrupted")


def _wait_for_benchmarking_trial_of(pid: int, storage: str, timeout: float = 120) -> int:
    """The number of a trial worker ``pid`` runs whose server is healthy (benchmarking)."""
    engine = create_engine(storage)
    query = text(
        "SELECT t.number FROM trials t JOIN trial_user_attributes a ON a.trial_id = t.trial_id "
        "JOIN tuner_launches l ON l.trial_id = t.trial_id "
        "WHERE t.state = 'RUNNING' AND a.key = :key AND a.value_json LIKE :worker "
        "AND l.status = 'running' AND l.seconds_to_healthy IS NOT NULL"
    )
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                with engine.connect() as conn:
                    found = conn.execute(
                        query, {"key": attrs.WORKER, "worker": f'"%:{pid}:%"'}
                    ).scalar()
            except Exception:  # noqa: BLE001 - the tables are being created
                found = None
            if found is not None:
                return int(found)
            time.sleep(0.2)
    finally:
        engine.dispose()
    raise AssertionError(f"worker {pid} ran no healthy trial within {timeout} s")


def test_a_host_on_other_hardware_is_refused_unless_the_study_is_split(
    tmp_path: Path, pg_storage: str
) -> None:
    store = Store(pg_storage)
    hardware: dict[str, Any] = {"gpu_count": 8, "gpu_model": "NVIDIA H200", "driver": "570"}
    # A worker on an H200 box joined first (what WorkerSession.join records).
    assert Claims(store, "split", "h200digest00").take(FINGERPRINT_CLAIM, "study")
    store.register_worker(
        "split", "gpu-a:1:1", host="gpu-a", fingerprint="h200digest00", hardware=hardware
    )
    # Two baseline launches: both trials complete, so `compare 0 1` below has two
    # measurements (a search trial at -O0 is often pruned after its first round).
    path = write_space(tmp_path, name="split", stop={"baseline_launches": 2})
    args = ["run", "--space", str(path), "--trials", "2", "--storage", pg_storage]
    refused = _run(tmp_path, *args)
    assert refused.returncode == 2, refused.stdout
    assert "runs on other hardware: host gpu-a (8 x NVIDIA H200" in refused.stdout
    assert "--split-by-host" in refused.stdout
    assert Store(pg_storage).launches("split") == []

    split = _run(tmp_path, *args, "--split-by-host")
    assert split.returncode == 0, split.stdout
    names = [n for n in Store(pg_storage).study_names() if n.startswith("split@")]
    assert len(names) == 1
    assert len(Store(pg_storage).launches(names[0])) == 2
    # Every reading command works with the PostgreSQL URL.
    for command in (["best"], ["trials"], ["show", "0"], ["compare", "0", "1"], ["cleanup"]):
        done = _run(tmp_path, *command, "--storage", pg_storage, "--study", names[0])
        assert done.returncode == 0, (command, done.stdout)
    best = _run(tmp_path, "best", "--storage", pg_storage, "--study", "split")
    assert best.returncode == 1
    assert f"split by host (--split-by-host) into {names[0]}" in best.stdout


def test_workers_starting_at_once_create_the_tables_once(pg_storage: str) -> None:
    code = (
        "import sys; from tuner.storage import Store; "
        "print(Store(sys.argv[1]).schema_version_found)"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, pg_storage], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    found = sorted(int(p.communicate(timeout=60)[0]) for p in procs)
    assert all(p.returncode == 0 for p in procs)
    assert found.count(0) == 1, f"one creator, the others found the tables made: {found}"
    engine = create_engine(pg_storage)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT value FROM tuner_meta")).scalars().all() == [
                str(SCHEMA_VERSION)
            ]
    finally:
        engine.dispose()
