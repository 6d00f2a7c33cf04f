"""Secrets stay secret, end to end: a sweep against `tuner sim` with an API key and a token.

The key guards the sim's /v1 routes (as vLLM's ``--api-key`` does), so trials that
complete prove the server got the real value; then no file tuner wrote (database, WAL,
logs, runs, caches) and no output of ``run``, ``best`` (every format), ``trials``,
``show`` and ``check`` holds the marker, and what tuner created is owner-only.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import optuna
import pytest

from tests.integration.sweep_helpers import FAST_SIM, run_tuner, tuner_in_process, write_space
from tuner.study import attrs

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MARKER = "tuner-marker-SECRET"
TOKEN = f"{MARKER}-1234"  # HF_TOKEN in server.env: never used by the sim, never shown
KEY = f"{MARKER}-5678"  # the API key the benchmark must present
SIM_MODEL = "sim/kimi-k2.5-int4-tp8"  # named, so no unauthenticated model discovery


def _env(cwd: Path) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": KEY,  # what the benchmark sends as "Authorization: Bearer"
        "TUNER_CACHE_DIR": str(cwd / "cache"),  # the --help cache is tuner's file too
    }


def _tuner(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tuner(*args, cwd=cwd, env=_env(cwd))


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("where", ["flag", "env"])
def test_no_secret_is_written_or_printed_and_the_server_gets_it(tmp_path: Path, where: str) -> None:
    env = {"HF_TOKEN": TOKEN, "NCCL_DEBUG": "WARN"}
    command = list(FAST_SIM)
    if where == "flag":
        command += ["--api-key", KEY]
    else:
        env["VLLM_API_KEY"] = KEY  # vLLM's other way to take the key
    space = write_space(
        tmp_path,
        server={"command": command, "env": env},
        benchmark={"model": SIM_MODEL},
    )
    outputs: list[str] = []

    def tuner(*args: str) -> subprocess.CompletedProcess[str]:
        done = _tuner(*args, cwd=tmp_path)
        outputs.extend([done.stdout, done.stderr])
        return done

    run = tuner("run", "--space", space.name, "--trials", "2", "--seed", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    # Both launches were measured: the server took the key, the benchmark presented it. The
    # search trial may be pruned after its first round when it runs slower (NCCL_PROTO=Simple,
    # -O0): a pruned trial was measured too, so it proves the key just as well.
    study = optuna.load_study(study_name="fast", storage=f"sqlite:///{tmp_path}/experiments.db")
    states = [t.state.name for t in study.trials]
    assert states[0] == "COMPLETE" and states[1] in ("COMPLETE", "PRUNED"), states
    assert all(
        str(t.user_attrs.get(attrs.REASON, "")).startswith("pruned after")
        for t in study.trials
        if t.state.name == "PRUNED"
    ), [t.user_attrs for t in study.trials]
    logs = sorted((tmp_path / "tuner-runs" / "fast").glob("trial-*/server.log"))
    assert len(logs) == 2
    first_log = logs[0].read_text()
    assert "'api_key': '***'" in first_log  # the sim has a key (and prints it hidden)
    assert '"POST /v1/completions HTTP/1.1" 200 OK' in first_log

    # The commands that only read run in this process (tuner_in_process: the same code as
    # the installed command without a Python start-up each): 25 s less per case.
    for args in (
        ("best",),
        ("best", "--format", "json"),
        ("best", "--format", "env"),
        ("best", "--format", "systemd"),
        ("best", "--format", "args"),
        ("best", "--format", "docker"),
        ("best", "--format", "vllm-config"),
        ("best", "--format", "systemd", "--which", "best"),
        ("trials",),
        ("show", "0"),
        ("show", "1"),
        ("check", "--space", space.name),
        ("report", "--out", "report.html"),  # the HTML report and its optuna artifact
    ):
        done = tuner_in_process(*args, cwd=tmp_path, env=_env(tmp_path))
        outputs.extend([done.stdout, done.stderr])
        # `tuner best` of a 2-launch study may answer "not settled" (exit 5): it answered.
        answered = (0, 5) if args[0] == "best" else (0,)
        assert done.returncode in answered, (args, done.stdout, done.stderr)
    shown = "\n".join(outputs)
    assert "HF_TOKEN=***" in shown  # `tuner show`: the names stay, the values do not
    if where == "flag":
        assert "--api-key '***'" in shown or "--api-key ***" in shown
    assert MARKER not in shown

    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != space]
    assert any(p.name == "experiments.db" for p in written)
    leaks = [str(p) for p in written if MARKER.encode() in p.read_bytes()]
    assert leaks == []

    for db in tmp_path.glob("experiments.db*"):
        assert _mode(db) == 0o600, db
    runs = tmp_path / "tuner-runs"
    for folder in (runs, runs / "fast", *(log.parent for log in logs)):
        assert _mode(folder) == 0o700, folder
    for log in logs:
        assert _mode(log) == 0o600, log


def test_a_server_that_prints_its_key_has_it_hidden_in_what_tuner_keeps(
    tmp_path: Path,
) -> None:
    """An old vLLM logs its --api-key at start; the stored tail and the reason hide it."""
    from tuner.space.spec import load_space
    from tuner.storage import Store
    from tuner.study.run.request import RunRequest
    from tuner.study.run.sweep import run_sweep

    script = "import sys; print('args:', sys.argv[1:], flush=True); sys.exit(3)"
    space = write_space(
        tmp_path,
        server={
            "command": ["{python}", "-c", script, "--port", "{port}", "--api-key", KEY],
            "startup_timeout_s": 30,
        },
    )
    storage = f"sqlite:///{tmp_path}/e.db"
    request = RunRequest(storage, 1, preflight=False, runs_dir=tmp_path / "runs")
    run_sweep(load_space(space), request)
    [launch] = Store(storage).launches("fast")
    assert launch.status == "failed"
    assert "exited with code 3" in (launch.reason or "")
    assert "args:" in (launch.log_tail or "") and "***" in (launch.log_tail or "")
    assert MARKER not in (launch.log_tail or "") + (launch.reason or "")
    [trial] = optuna.load_study(study_name="fast", storage=storage).trials
    assert MARKER not in str(trial.user_attrs)
    for db in tmp_path.glob("e.db*"):
        assert MARKER.encode() not in db.read_bytes(), db
