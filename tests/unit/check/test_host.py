"""tuner.check.host: a fixed port is free, pinned CPUs exist, the database is writable."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.unit.check.helpers import FakeHelp, messages, run_check, space_file
from tuner.check import check_space
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
