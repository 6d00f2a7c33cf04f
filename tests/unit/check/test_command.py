"""tuner.check.command: the server command exists, and which words name the program."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.check.helpers import messages, run_check
from tuner.check import command_prefix


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], 3),
        (["vllm", "serve", "org/model", "-tp", "8"], 2),
        (["vllm", "serve", "--model", "m"], 2),
        (["/usr/bin/python3.11", "server.py", "--port", "1"], 2),
        (["sglang", "launch", "server", "--x"], 3),
        # python's own options before the script or module are part of the program
        (["python3", "-u", "server.py", "--port", "1"], 3),
        (["python3", "-X", "dev", "-OO", "-m", "mod", "--port", "1"], 6),
        (["python3", "-Wignore", "server.py", "--port", "1"], 3),
    ],
)
def test_command_prefix(argv: list[str], prefix: int) -> None:
    assert command_prefix(argv) == argv[:prefix]


def test_a_module_that_is_not_installed_is_an_error(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, command=["{python}", "-m", "no_such_pkg.server", "--port", "{port}"]
    )
    assert "module 'no_such_pkg.server' is not installed" in messages(report, "error")
    # The advice for a missing vllm command or module: tests/unit/check/test_server_kind.py


def test_a_submodule_is_found_without_importing_it(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, command=["{python}", "-m", "tuner.sim.no_such", "--port", "{port}"]
    )
    assert "not installed" in messages(report, "error")
    assert run_check(tmp_path).ok  # tuner.sim has a __main__.py
