"""tuner.check.host: a fixed port is free, pinned CPUs exist, the database is writable."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.unit.check.helpers import FakeHelp, messages, run_check, space_file
from tuner.check import check_space
from tuner.cli import app
from tuner.space.spec import load_space


def test_a_busy_fixed_port_is_an_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        command = ["{python}", "-m", "tuner.sim", "--port", str(port)]
        report = run_check(tmp_path, command=command, port=port)
        assert f"127.0.0.1:{port} is already in use" in messages(report, "error")
    assert run_check(tmp_path, command=command, port=port).ok


def test_cpus_that_do_not_exist_or_overlap(tmp_path: Path) -> None:
    report = run_check(tmp_path, cpus=[4096], benchmark={"cpus": [0]})
    assert "server.cpus: CPUs [4096] are not available" in messages(report, "error")
    report = run_check(tmp_path, cpus=[0], benchmark={"cpus": [0]})
    assert "competes with the server" in messages(report, "warning")


def test_an_unwritable_database_is_an_error(tmp_path: Path) -> None:
    space = load_space(space_file(tmp_path))
    report = check_space(
        space,
        storage=f"sqlite:///{tmp_path}/missing/dir/x.db",
        read_help=FakeHelp(),
        help_cache_dir=tmp_path / "cache",
    )
    assert [i.key for i in report.errors] == ["storage"]


@pytest.mark.parametrize("folder", ["new", "."], ids=["folder missing", "folder there"])
def test_tuner_check_creates_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    # `tuner check` as typed, on the shipped demo: the database it names is left unmade,
    # whether its folder is missing (an error) or there (`tuner run` creates the file).
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "runs" / folder / "new.db"
    (tmp_path / "runs").mkdir()
    before = sorted(p.name for p in (tmp_path / "runs").iterdir())
    result = CliRunner().invoke(
        app, ["check", "--space", "sim", "--storage", f"sqlite:///{db}"], prog_name="tuner"
    )
    assert f"{db}" in result.output, result.output
    assert not db.exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == before
    assert result.exit_code == (2 if folder == "new" else 0), result.output
