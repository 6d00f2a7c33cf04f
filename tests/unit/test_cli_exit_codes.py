"""Exit codes are part of the interface: each command's refusals, through typer's CliRunner.

No server is started: the studies are hand-made, the benchmark is refused before it
runs, and optuna-dashboard is replaced by a fake that exits with a chosen code.
"""

from __future__ import annotations

import json
import signal
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tests.unit.views_helpers import BASELINE, hand_study
from tuner import cli, exit_codes
from tuner.errors import Terminated

runner = CliRunner()


def _invoke(*args: str) -> Any:
    return runner.invoke(cli.app, list(args), env={"COLUMNS": "200"})


def test_best_without_a_completed_trial_exits_3_with_a_sentence(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [({}, None)])
    done = _invoke("best", "--storage", storage)
    assert done.exit_code == exit_codes.NO_ANSWER == 3
    assert done.stdout == ""
    assert "Error: study 'hand' has no completed trial yet (0 complete, 1 failed" in done.stderr
    assert "tuner trials --study hand" in done.stderr


def test_best_json_without_an_answer_prints_the_document_then_exits_3(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [({}, None)])
    done = _invoke("best", "--storage", storage, "--format", "json")
    assert done.exit_code == exit_codes.NO_ANSWER
    document = json.loads(done.stdout)
    assert document["best"] is None and document["trials"]["failed"] == 1
    assert "no completed trial yet" in done.stderr


@pytest.mark.parametrize("fmt", ["env", "systemd", "args", "docker", "vllm-config"])
def test_best_has_nothing_to_deploy_without_an_answer(tmp_path: Path, fmt: str) -> None:
    storage = hand_study(tmp_path, [({}, None)])
    done = _invoke("best", "--storage", storage, "--format", fmt)
    assert done.exit_code == exit_codes.NO_ANSWER and done.stdout == ""


def test_best_nccl_tuner_without_a_probe_is_a_config_error_naming_the_fix(
    tmp_path: Path,
) -> None:
    done = _invoke("best", "--storage", hand_study(tmp_path, [BASELINE]), "--format", "nccl-tuner")
    assert done.exit_code == exit_codes.CONFIG and done.stdout == ""
    assert "no probe of the defaults" in done.stderr and "add a probe: section" in done.stderr


def test_best_with_an_answer_exits_0(tmp_path: Path) -> None:
    done = _invoke("best", "--storage", hand_study(tmp_path, [BASELINE]))
    assert done.exit_code == exit_codes.OK, done.stderr
    assert "Recommendation:" in done.stdout


@pytest.mark.parametrize(
    ("command", "listed"),
    [
        (["check", "--space", "nowhere.yaml"], "table or json"),
        (["bench", "--url", "http://127.0.0.1:9"], "table or json"),
        (
            ["best", "--storage", "sqlite:///nowhere.db"],
            "table, json, env, systemd, args, docker, vllm-config or nccl-tuner",
        ),
    ],
    ids=["check", "bench", "best"],
)
def test_an_unknown_format_is_refused_before_any_work(command: list[str], listed: str) -> None:
    # Nothing is read or measured first: the space and the database do not exist, and
    # nothing listens on the bench URL.
    done = _invoke(*command, "--format", "xml")
    assert done.exit_code == exit_codes.CONFIG == 2
    assert f"Error: --format must be {listed}, not 'xml'" in done.stderr


def test_an_unknown_which_or_compare_format_is_refused_before_any_work() -> None:
    done = _invoke("best", "--storage", "sqlite:///nowhere.db", "--which", "worst")
    assert done.exit_code == exit_codes.CONFIG
    assert "Error: --which must be recommended or best, not 'worst'" in done.stderr
    done = _invoke("compare-studies", "a", "--storage", "sqlite:///nowhere.db", "-f", "xml")
    assert done.exit_code == exit_codes.CONFIG
    assert "Error: --format must be table or json, not 'xml'" in done.stderr


def test_compare_studies_of_a_missing_database_exits_1(tmp_path: Path) -> None:
    done = _invoke("compare-studies", "a", "--storage", f"sqlite:///{tmp_path}/none.db")
    assert done.exit_code == exit_codes.ERROR
    assert "none.db: no such database" in done.stderr
    assert not (tmp_path / "none.db").exists()


def test_dashboard_exits_0_when_stopped_and_1_when_it_cannot_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # optuna-dashboard runs in tuner's process (the storage URL stays off the command
    # line), so its "exit code" is whether its server could run.
    fake = types.ModuleType("optuna_dashboard")
    fake.run_server = lambda storage, **kw: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "optuna_dashboard", fake)
    storage = hand_study(tmp_path, [BASELINE])
    assert _invoke("dashboard", "--storage", storage).exit_code == 0

    def port_taken(storage: str, **kw: Any) -> None:
        raise OSError(98, "Address already in use")

    fake.run_server = port_taken  # type: ignore[attr-defined]
    done = _invoke("dashboard", "--storage", storage)
    assert done.exit_code == exit_codes.ERROR
    assert "could not start on 127.0.0.1:8080" in done.stderr


@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGTERM, exit_codes.TERMINATED), (signal.SIGHUP, exit_codes.HANGUP)],
    ids=["SIGTERM", "SIGHUP"],
)
def test_a_terminating_signal_exits_128_plus_its_number(sig: signal.Signals, code: int) -> None:
    @cli.handles_errors
    def stopped() -> None:
        raise Terminated(sig)

    with pytest.raises(typer.Exit) as caught:
        stopped()
    assert caught.value.exit_code == code == 128 + sig


def test_ctrl_c_still_exits_130() -> None:
    @cli.handles_errors
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(typer.Exit) as caught:
        interrupted()
    assert caught.value.exit_code == exit_codes.INTERRUPTED == 130
