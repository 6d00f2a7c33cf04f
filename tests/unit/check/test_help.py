"""tuner.check.help: the server's --help, read once per command and cached."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.unit.check.helpers import FakeHelp, messages, run_check
from tuner.check import server_help


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
    assert "flags not checked" in messages(report, "warning")
    report = run_check(tmp_path, FakeHelp(code=None))
    assert "did not finish" in messages(report, "warning")
    assert not list((tmp_path / "cache").glob("*.json"))  # a failure is not cached
