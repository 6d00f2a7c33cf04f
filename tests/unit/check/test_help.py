"""tuner.check.help: the server's --help, read once per command and cached."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.unit.check.helpers import PLAIN_HELP, FakeHelp, messages, run_check, space_file
from tuner.check import check_space, server_help
from tuner.space.spec import load_space


def test_the_help_is_read_once_and_cached_per_command(tmp_path: Path) -> None:
    reader = FakeHelp()
    run_check(tmp_path, reader)
    run_check(tmp_path, reader)
    assert len(reader.calls) == 1
    cached = list((tmp_path / "cache").glob("*.json"))
    assert len(cached) == 1
    assert json.loads(cached[0].read_text())["argv"][1:] == ["-m", "tuner.sim"]


def test_vllms_grouped_help_is_read_as_help_all(tmp_path: Path) -> None:
    reader = FakeHelp(grouped=True)
    help_text = server_help(
        [sys.executable, "-m", "server", "--port", "1"], {}, cache_dir=tmp_path, read_help=reader
    )
    assert [c[-1] for c in reader.calls] == ["--help", "--help=all"]
    assert help_text.vllm_style and "--max-num-seqs" in help_text.text


def test_a_vllm_command_asks_for_help_all_first(tmp_path: Path) -> None:
    reader = FakeHelp()
    server_help(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server"],
        {},
        cache_dir=tmp_path,
        read_help=reader,
    )
    assert [c[-1] for c in reader.calls] == ["--help=all"]


def test_a_help_that_cannot_be_read_is_a_warning_not_an_error(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(text="boom", code=1))
    assert report.ok
    assert "flags: flags not checked: `" in messages(report, "warning")
    assert "--help` exited with code 1: boom" in messages(report, "warning")
    report = run_check(tmp_path, FakeHelp(code=None))
    assert "flags: flags not checked: `" in messages(report, "warning")
    assert "did not finish" in messages(report, "warning")
    assert not list((tmp_path / "cache").glob("*.json"))  # a failure is not cached


SCRIPT = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--port")
{more}parser.parse_args()
"""


def test_a_python_script_is_read_again_once_it_is_edited(tmp_path: Path) -> None:
    # `python my_server.py`: the cache key holds the script's file, modification time
    # and size, so a flag added to the script is seen without clearing the cache.
    script = tmp_path / "my_server.py"
    script.write_text(SCRIPT.format(more=""))
    command = ["{python}", str(script), "--port", "{port}", "--new-flag", "1"]
    report = check_space(
        load_space(space_file(tmp_path, command=command)),
        storage=f"sqlite:///{tmp_path}/check.db",
        help_cache_dir=tmp_path / "cache",
    )
    assert "server.command: the server does not accept '--new-flag'" in messages(report, "error")
    script.write_text(SCRIPT.format(more='parser.add_argument("--new-flag")\n'))
    report = check_space(
        load_space(space_file(tmp_path, command=command)),
        storage=f"sqlite:///{tmp_path}/check.db",
        help_cache_dir=tmp_path / "cache",
    )
    assert "--new-flag" not in messages(report, "error"), messages(report, "error")
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2  # one per version of it


def test_a_script_started_with_python_options_is_keyed_on_its_file_too(tmp_path: Path) -> None:
    # `python -u my_server.py`: the options before the script do not hide it from the key.
    script = tmp_path / "my_server.py"
    script.write_text(SCRIPT.format(more=""))
    reader = FakeHelp(text=PLAIN_HELP)
    argv = [sys.executable, "-u", str(script), "--port", "1"]
    server_help(argv, {}, cache_dir=tmp_path / "cache", read_help=reader)
    script.write_text(SCRIPT.format(more='parser.add_argument("--new-flag")\n'))
    server_help(argv, {}, cache_dir=tmp_path / "cache", read_help=reader)
    assert len(reader.calls) == 2  # the edited script is read again


def test_the_same_script_is_read_once(tmp_path: Path) -> None:
    script = tmp_path / "my_server.py"
    script.write_text(SCRIPT.format(more=""))
    reader = FakeHelp(text=PLAIN_HELP)
    for _ in range(2):
        server_help(
            [sys.executable, str(script), "--port", "1"], {}, cache_dir=tmp_path, read_help=reader
        )
    assert len(reader.calls) == 1
