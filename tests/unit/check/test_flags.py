"""tuner.check.flags: every flag the space can produce against the server's --help."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.check.helpers import PLAIN_HELP, SIM, FakeHelp, messages, run_check
from tuner.check import accepts


def test_an_unknown_flag_is_an_error_with_the_close_match(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={"seqs": {"args": ["--max-num-seq5", "{value}"], "choices": ["default", 8]}},
    )
    assert not report.ok
    assert "params.seqs: the server does not accept '--max-num-seq5'" in messages(report, "error")
    assert "did you mean --max-num-seqs?" in messages(report, "error")


def test_the_commands_own_flags_are_checked(tmp_path: Path) -> None:
    report = run_check(tmp_path, command=[*SIM, "--max-num-seqs", "4", "--no-such-flag"])
    assert "server.command: the server does not accept '--no-such-flag'" in messages(
        report, "error"
    )
    assert "--max-num-seqs" not in messages(report, "error")


def test_a_value_outside_the_listed_choices_is_an_error(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={
            "dtype": {"args": ["--dtype", "{value}"], "choices": ["default", "bfloat16", "bf16"]},
            "mode": {"args": ["--tokenizer-mode={value}"], "choices": ["default", "hf", "slow"]},
        },
    )
    errors = messages(report, "error")
    assert "--dtype 'bf16' is not one of the server's choices" in errors
    assert "'bfloat16'" not in errors
    assert "'slow'" in errors and "'hf'" not in errors


def test_an_abbreviation_is_a_warning(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={"seqs": {"args": ["--max-num-batched", "{value}"], "choices": ["default", 8]}},
    )
    assert report.ok
    assert "abbreviation of --max-num-batched-tokens" in messages(report, "warning")


@pytest.mark.parametrize(
    ("flag", "vllm_style", "ok"),
    [
        ("--max-num-seqs", True, True),
        ("--max_num_seqs", True, True),  # vLLM reads underscores as dashes
        ("--max_num_seqs", False, False),
        ("--compilation-config.level=3", True, True),  # vLLM's dotted JSON arguments
        ("-O3", True, True),  # vLLM's -O shorthand
        ("-Odecode", True, True),
        ("-tp", True, True),
        ("-ep", True, True),
        ("--port=8000", False, True),
        ("-X3", False, False),
    ],
)
def test_accepts(flag: str, vllm_style: bool, ok: bool) -> None:
    options = {
        "--max-num-seqs",
        "--compilation-config",
        "--optimization-level",
        "-tp",
        "-ep",
        "--port",
    }
    assert accepts(flag, options, vllm_style) is ok


def test_a_short_option_takes_an_attached_value() -> None:
    assert accepts("-O3", {"-O", "--port"}, vllm_style=False)
    assert not accepts("-O3", {"--port"}, vllm_style=False)


def test_plain_argparse_help_checks_short_options(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        FakeHelp(text=PLAIN_HELP),
        params={
            "o": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
            "mode": {"args": ["--mode", "{value}"], "choices": ["default", "fast", "warp"]},
        },
    )
    errors = messages(report, "error")
    assert "-O" not in errors
    assert "'warp' is not one of the server's choices: fast, slow" in errors
