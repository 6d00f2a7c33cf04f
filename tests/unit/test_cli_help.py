"""Every command's --help at 80 columns: nothing cut, one style, and what it says is true."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tuner.cli import app


def _commands() -> list[list[str]]:
    """Every command and sub-command of the app, as the words that name it."""
    found: list[list[str]] = [[]]

    def walk(group: Any, prefix: list[str]) -> None:  # click's Group (Typer vendors click)
        for name, command in getattr(group, "commands", {}).items():
            found.append([*prefix, name])
            walk(command, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = _commands()


def _help(words: list[str], width: int = 80) -> str:
    result = CliRunner().invoke(
        app, [*words, "--help"], env={"COLUMNS": str(width)}, prog_name="tuner"
    )
    assert result.exit_code == 0, result.output
    return result.output


def _words(text: str) -> str:
    """The help's words in one line, the panels' borders left out."""
    return " ".join(w for w in text.split() if w.strip("│╭╮╰╯─"))


def test_every_command_is_listed() -> None:
    names = {" ".join(c) for c in COMMANDS}
    assert {"run", "bench", "sim", "cleanup", "show", "probe allreduce"} <= names


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "tuner")
@pytest.mark.parametrize("width", [80, 60])
def test_no_help_is_cut_or_wider_than_the_terminal(words: list[str], width: int) -> None:
    text = _help(words, width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    # one style: Typer's rich panels, sim's flags included
    assert f"Usage: tuner {' '.join(words)}".rstrip() in text
    assert "╭─ Options" in text


@pytest.mark.parametrize("words", COMMANDS[1:], ids=lambda w: " ".join(w))
def test_each_summary_is_one_paragraph_rich_wraps(words: list[str]) -> None:
    """In rich markup mode Typer keeps a docstring's line breaks: a summary written over two
    lines breaks mid-sentence in `tuner --help`'s list of commands."""
    command: Any = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]
    summary = inspect.cleandoc(command.help or "").split("\n\n")[0]
    assert "\n" not in summary


@pytest.mark.parametrize("words", COMMANDS[1:], ids=lambda w: " ".join(w))
def test_every_option_says_what_it_is(words: list[str]) -> None:
    command: Any = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]
    silent = [p.name for p in getattr(command, "params", ()) if not getattr(p, "help", None)]
    assert silent == []


def test_long_words_stay_whole_at_80_columns() -> None:
    """The words the report named cut: `screening.max_launches…`, `sqlite:///experiments.…`
    (run), the option `--max-concurren…` (bench)."""
    run = _help(["run"])
    assert "screening.max_launches" in run and "sqlite:///experiments.db" in run
    assert "--max-concurrency" in _help(["bench"])


def test_sim_help_is_drawn_from_its_parser_in_the_same_style() -> None:
    text = _help(["sim"])
    assert "usage: python -m tuner.sim" not in text  # not argparse's own text
    for flag in ("--profile", "--tensor-parallel-size, -tp", "--drift-launches", "--port"):
        assert flag in text
    assert "╭─ Simulator-only flags" in text and "╭─ Faults across launches" in text
    assert "One of: clear-gain, consumer-pcie," in _words(text)  # the profiles, by name


def test_sim_without_help_still_runs_its_parser() -> None:
    result = CliRunner().invoke(app, ["sim", "--no-such-port-given"], prog_name="tuner")
    assert result.exit_code == 2  # argparse's usage error: --port is required


def test_study_option_says_its_true_default() -> None:
    cleanup = _words(_help(["cleanup"]))
    assert "--space" not in cleanup and "space file" not in cleanup
    assert "every study stored" in cleanup
    for words in (["best"], ["report"], ["trials"], ["show"], ["compare"]):
        text = _words(_help(words))
        assert "--space" in text and "else the only one stored" in text, words


def test_hours_below_its_floor_is_refused_before_any_work(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "-s", "sim", "--hours", "0.001", "--storage", f"sqlite:///{tmp_path}/x.db"],
        prog_name="tuner",
    )
    assert result.exit_code == 2
    assert "--hours 0.001: give at least 0.01" in result.output
    assert not (tmp_path / "x.db").exists()
