"""The whole loop against `tuner sim` as a real subprocess: real launcher, SQLite, HTTP."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import optuna
import pytest

from tests.integration.sweep_helpers import FAST_SIM, run_tuner, tuner_in_process, write_space
from tuner.launcher import ServerProcess, free_port
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep
from tuner.trial.runner import launch_spec_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def _tuner(*args: str, cwd: Path, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return run_tuner(*args, cwd=cwd, timeout=timeout)


def test_env_and_flags_reach_the_server_and_default_unsets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    space = load_space(write_space(tmp_path))
    # Inherited from the user's shell, but `default` means the server must not see it.
    monkeypatch.setenv("NCCL_PROTO", "Simple")
    settings = settings_from_params(space.spec, {"NCCL_PROTO": "default", "compilation": 0})
    spec = launch_spec_for(space, settings, port=free_port(), trial_dir=tmp_path / "t0")
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy()
        seen = httpx.get(f"http://127.0.0.1:{spec.port}/sim/config").json()
    assert "-O0" in seen["argv"]
    assert "NCCL_PROTO" not in seen["env"]

    settings = settings_from_params(space.spec, {"NCCL_PROTO": "LL", "compilation": "default"})
    spec = launch_spec_for(space, settings, port=free_port(), trial_dir=tmp_path / "t1")
    with ServerProcess(spec) as server:
        server.start()
        server.wait_healthy()
        seen = httpx.get(f"http://127.0.0.1:{spec.port}/sim/config").json()
    assert seen["env"]["NCCL_PROTO"] == "LL"
    assert not any(a.startswith("-O") for a in seen["argv"])


def test_a_config_that_kills_the_server_is_a_failed_trial_and_the_sweep_goes_on(
    tmp_path: Path,
) -> None:
    path = write_space(
        tmp_path,
        params={"NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["Foo"]}},
    )
    storage = f"sqlite:///{tmp_path}/e.db"
    # `tuner check` would refuse NCCL_PROTO=Foo before any launch; the point here is the
    # server's own failure, so the pre-flight check is left out.
    result = run_sweep(load_space(path), RunRequest(storage, 2, seed=1, preflight=False))
    study = optuna.load_study(study_name="fast", storage=storage)
    states = [t.state.name for t in study.trials]
    assert states[:2] == ["COMPLETE", "FAIL"]
    failed = Store(storage).launches("fast", status="failed")
    assert len(failed) == 1
    assert "exited with code" in (failed[0].reason or "")
    assert "NCCL_PROTO" in (failed[0].reason or "") + (failed[0].log_tail or "")
    assert result.launched == 2


def test_cli_sweep_best_json_trials_and_resume(tmp_path: Path) -> None:
    path = write_space(tmp_path)
    run = _tuner("run", "--space", str(path), "--trials", "3", "--seed", "3", cwd=tmp_path)
    assert run.returncode == 0, run.stderr + run.stdout
    assert (tmp_path / "experiments.db").exists()
    assert "trial   0 baseline" in run.stdout

    best = tuner_in_process("best", "--space", str(path), "--format", "json", cwd=tmp_path)
    assert best.returncode in (0, 5), best.stderr  # 5: answered "not settled" (3 launches)
    answer = json.loads(best.stdout)
    assert answer["verdict"] in ("no_gain", "not_settled", "confirmed")
    for key in ("study", "best", "recommended", "baseline", "stop_reason", "trials"):
        assert key in answer
    for key in ("trial", "params", "env", "args", "value", "stderr"):
        assert key in answer["recommended"]
    assert set(answer["baseline"]["params"]) == {"NCCL_PROTO", "compilation"}
    assert (
        answer["trials"]["complete"] + answer["trials"]["pruned"] + answer["trials"]["failed"] >= 3
    )
    assert answer["stop_reason"] == "budget"

    # The same command with a bigger budget resumes the same study.
    again = _tuner("run", "--space", str(path), "--trials", "4", "--seed", "3", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    study = optuna.load_study(study_name="fast", storage=f"sqlite:///{tmp_path}/experiments.db")
    launched = [t for t in study.trials if t.user_attrs.get("tuner_launched")]
    assert len(launched) == 4

    listing = tuner_in_process("trials", "--space", str(path), cwd=tmp_path)
    assert listing.returncode == 0 and "baseline" in listing.stdout


def test_run_exits_3_when_every_launch_fails(tmp_path: Path) -> None:
    # The sim refuses a tensor-parallel size larger than its 8 GPUs at startup, as vLLM does.
    path = write_space(tmp_path, server={"command": [*FAST_SIM, "--tensor-parallel-size", "64"]})
    done = _tuner("run", "--space", str(path), "--trials", "3", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr  # tuner/exit_codes.py: ALL_FAILED
    assert "all_failed" in done.stdout and "tuner trials" in done.stdout


def test_ctrl_c_stops_the_server_marks_the_trial_and_exits_non_zero(tmp_path: Path) -> None:
    path = write_space(tmp_path, benchmark={"max_tokens": 400, "requests": 4, "rounds": 3})
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", "--space", str(path), "--trials", "3"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    store_url = f"sqlite:///{tmp_path}/experiments.db"
    server_pid = _wait_for_running_launch(tmp_path, store_url)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert not _alive(server_pid)
    launches = Store(store_url).launches("fast")
    assert launches[-1].status == "failed" and launches[-1].reason == "interrupted"
    assert "resume" in out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_stop_as_cleanly_as_ctrl_c(tmp_path: Path, sig: signal.Signals) -> None:
    # What a batch scheduler does (Slurm's scancel, Kubernetes' pod stop): one signal.
    path = write_space(tmp_path, benchmark={"max_tokens": 400, "requests": 4, "rounds": 3})
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", "--space", str(path), "--trials", "3"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # The signal's default action, as a terminal gives it: under `nohup` the tests
        # would hand tuner an ignored SIGHUP, which tuner rightly keeps ignoring.
        preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL),
    )
    store_url = f"sqlite:///{tmp_path}/experiments.db"
    server_pid = _wait_for_running_launch(tmp_path, store_url)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, out
    assert not _alive(server_pid)
    reason = f"terminated by signal ({sig.name})"
    launch = Store(store_url).launches("fast")[-1]
    assert (launch.status, launch.reason, launch.pid) == ("failed", reason, server_pid)
    assert launch.finished_at is not None and launch.cleanup_ok
    trial = optuna.load_study(study_name="fast", storage=store_url).trials[-1]
    assert trial.state.name == "FAIL" and trial.user_attrs["tuner_reason"] == reason
    study = Store(store_url).study("fast")
    assert study is not None and study.stop_reason == "terminated"
    assert study.stop_detail == f"stopped by {sig.name}; run the same command to resume"
    assert f"Stopped by {sig.name}." in out and "resume" in out


def test_a_second_sigterm_while_stopping_kills_at_once_and_still_records(tmp_path: Path) -> None:
    # The orphan worker ignores SIGTERM, so the stop would wait stop_timeout_s (30 s).
    command = [*FAST_SIM, "--leave-orphan"]
    path = write_space(
        tmp_path,
        server={"command": command, "stop_timeout_s": 30},
        benchmark={"max_tokens": 400, "requests": 4, "rounds": 3},
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", "--space", str(path), "--trials", "3"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    store_url = f"sqlite:///{tmp_path}/experiments.db"
    server_pid = _wait_for_running_launch(tmp_path, store_url)
    proc.send_signal(signal.SIGTERM)
    _wait_until(lambda: not _alive(server_pid), "the leader to exit on the stop's SIGTERM")
    stopping = time.monotonic()
    proc.send_signal(signal.SIGTERM)  # the stop now waits on the orphan: hurry it
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, out
    assert time.monotonic() - stopping < 20, "the second signal did not cut the 30 s wait"
    launch = Store(store_url).launches("fast")[-1]
    assert (launch.status, launch.reason) == ("failed", "terminated by signal (SIGTERM)")
    assert launch.cleanup is not None and launch.cleanup["sigkilled"], "the orphan was killed"
    assert launch.cleanup_ok is True
    study = Store(store_url).study("fast")
    assert study is not None and study.stop_reason == "terminated"


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def test_a_killed_tuner_leaves_a_server_the_next_run_stops(tmp_path: Path) -> None:
    path, store_url, server_pid = _kill_tuner_mid_trial(tmp_path)
    assert _alive(server_pid), "the server runs in its own session and survives tuner"

    again = _tuner("run", "--space", str(path), "--trials", "2", cwd=tmp_path)
    assert again.returncode == 0, again.stderr + again.stdout
    assert not _alive(server_pid)
    first = Store(store_url).launches("fast")[0]
    assert first.status == "failed" and first.reason == "interrupted"
    study = optuna.load_study(study_name="fast", storage=store_url)
    assert study.trials[0].state.name == "FAIL"
    assert sum(1 for t in study.trials if t.state.name == "COMPLETE") >= 1


def _kill_tuner_mid_trial(tmp_path: Path) -> tuple[Path, str, int]:
    """Start `tuner run`, kill -9 it while a server is benchmarking: (space, storage, pid)."""
    path = write_space(tmp_path, benchmark={"max_tokens": 400, "requests": 4, "rounds": 3})
    proc = subprocess.Popen(
        [sys.executable, "-m", "tuner", "run", "--space", str(path), "--trials", "2"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    store_url = f"sqlite:///{tmp_path}/experiments.db"
    server_pid = _wait_for_running_launch(tmp_path, store_url)
    proc.kill()  # kill -9: no cleanup runs in tuner
    proc.wait(timeout=10)
    return path, store_url, server_pid


def _wait_for_running_launch(tmp_path: Path, store_url: str, timeout: float = 120) -> int:
    """Poll the database (read-only, cheap) until a launch is benchmarking; its server pid."""
    import sqlite3

    db = tmp_path / "experiments.db"
    query = (
        "SELECT pid FROM tuner_launches WHERE status = 'running' "
        "AND seconds_to_healthy IS NOT NULL AND pid IS NOT NULL ORDER BY id DESC LIMIT 1"
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                    row = conn.execute(query).fetchone()
            except sqlite3.Error:
                row = None  # tables not created yet, or a write in progress
            if row:
                return int(row[0])
        time.sleep(0.1)
    raise AssertionError(f"no launch became healthy within {timeout} s ({store_url})")


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_tuner_cleanup_stops_a_left_server_without_running_a_trial(tmp_path: Path) -> None:
    _, store_url, server_pid = _kill_tuner_mid_trial(tmp_path)

    done = _tuner("cleanup", cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"stopped server pid {server_pid}" in done.stdout
    assert not _alive(server_pid)
    assert Store(store_url).launches("fast")[0].reason == "interrupted"
    assert len(Store(store_url).launches("fast")) == 1  # cleanup launched nothing


def test_sweep_goes_on_past_servers_that_leak_workers_and_flood_their_log(
    tmp_path: Path,
) -> None:
    """--leave-orphan: a grandchild in its own session that ignores SIGTERM, as vLLM's
    workers can be; --flood-log: tens of KB/s of log. Neither may stop the sweep or
    survive it (the autouse fixture fails the test on any survivor)."""
    from tests.integration.sweep_helpers import FAST_SIM

    path = write_space(
        tmp_path,
        server={"command": [*FAST_SIM, "--leave-orphan", "--flood-log"], "stop_timeout_s": 2},
    )
    storage = f"sqlite:///{tmp_path}/e.db"
    result = run_sweep(load_space(path), RunRequest(storage, 2, seed=0))
    assert result.launched == 2
    launches = Store(storage).launches("fast")
    assert [r.status for r in launches] == ["complete", "complete"]
    for row in launches:
        assert row.cleanup is not None and row.cleanup["sigkilled"], "the orphan needed SIGKILL"
        assert row.cleanup_ok is True
        assert len(row.log_tail or "") < 64_000
