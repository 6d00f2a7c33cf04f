"""`tuner check` as a library: every pre-flight check, with a fake --help (no subprocess)."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tuner.check import (
    CheckReport,
    accepts,
    check_nccl_variable,
    check_space,
    command_prefix,
    server_help,
)
from tuner.space.spec import load_space

VLLM_HELP = """usage: api_server.py [-h] [--model MODEL] [--host HOST] [--port PORT]
                     [--dtype {auto,bfloat16,float,float16,float32,half}]
                     [--tokenizer-mode ['auto', 'hf', 'mistral']]
                     [--enforce-eager | --no-enforce-eager]
                     [--max-num-seqs MAX_NUM_SEQS]
                     [--max-num-batched-tokens MAX_NUM_BATCHED_TOKENS]
                     [--compilation-config COMPILATION_CONFIG]
                     [--optimization-level OPTIMIZATION_LEVEL]
  --tensor-parallel-size TENSOR_PARALLEL_SIZE, -tp TENSOR_PARALLEL_SIZE
  --enable-expert-parallel, --no-enable-expert-parallel, -ep
  --optimization-level OPTIMIZATION_LEVEL
                        with -O0 having the best startup time. (default: 2)
"""
PLAIN_HELP = """usage: server [-h] [--port PORT] [--threads N] [-O LEVEL] [--mode {fast,slow}]
"""


class FakeHelp:
    """Answers --help like a server would, and counts the calls."""

    def __init__(self, text: str = VLLM_HELP, code: int | None = 0, grouped: bool = False):
        self.text, self.code, self.grouped = text, code, grouped
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], env: Mapping[str, str], timeout_s: float):
        self.calls.append(argv)
        if self.grouped and argv[-1] == "--help":
            return self.code, "usage: x\n\nConfig Groups:\n  ModelConfig  the model\n  --model"
        return self.code, self.text


SIM = ["{python}", "-m", "tuner.sim", "--host", "127.0.0.1", "--port", "{port}"]


def space_file(tmp_path: Path, **sections: Any) -> Path:
    raw: dict[str, Any] = {"server": {"command": list(SIM)}}
    for key, value in sections.items():
        if key == "command":
            raw["server"]["command"] = value
        elif key in ("env", "port", "cpus"):
            raw["server"][key] = value
        else:
            raw[key] = value
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def run_check(tmp_path: Path, reader: FakeHelp | None = None, **sections: Any) -> CheckReport:
    space = load_space(space_file(tmp_path, **sections))
    return check_space(
        space,
        storage=f"sqlite:///{tmp_path}/check.db",
        help_cache_dir=tmp_path / "cache",
        read_help=reader or FakeHelp(),
    )


def messages(report: CheckReport, level: str) -> str:
    return "\n".join(f"{i.key}: {i.message}" for i in report.items if i.level == level)


# --- the whole report ----------------------------------------------------------------------


def test_a_good_space_is_ok_and_says_what_it_checked(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        params={
            "seqs": {"args": ["--max-num-seqs", "{value}"], "int": [4, 64]},
            "eager": {"args": ["--enforce-eager"], "choices": ["default", True]},
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
        },
    )
    assert report.ok, report.summary()
    keys = {i.key for i in report.items}
    assert {"server.command", "params", "server.port", "storage"} <= keys
    assert report.to_dict()["ok"] is True
    assert "0 error(s)" in report.summary()


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


def test_a_help_that_cannot_be_read_is_a_warning_not_an_error(tmp_path: Path) -> None:
    report = run_check(tmp_path, FakeHelp(text="boom", code=1))
    assert report.ok
    assert "flags not checked" in messages(report, "warning")
    report = run_check(tmp_path, FakeHelp(code=None))
    assert "did not finish" in messages(report, "warning")
    assert not list((tmp_path / "cache").glob("*.json"))  # a failure is not cached


# --- accepts: the spellings servers take ---------------------------------------------------


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


@pytest.mark.parametrize(
    ("argv", "prefix"),
    [
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"], 3),
        (["vllm", "serve", "org/model", "-tp", "8"], 2),
        (["vllm", "serve", "--model", "m"], 2),
        (["/usr/bin/python3.11", "server.py", "--port", "1"], 2),
        (["sglang", "launch", "server", "--x"], 3),
    ],
)
def test_command_prefix(argv: list[str], prefix: int) -> None:
    assert command_prefix(argv) == argv[:prefix]


# --- the command ---------------------------------------------------------------------------


def test_a_missing_vllm_command_points_at_python_m(tmp_path: Path) -> None:
    reader = FakeHelp()
    report = run_check(
        tmp_path,
        reader,
        command=["vllm", "serve", "m", "--port", "{port}"],
        env={"PATH": str(tmp_path)},
    )
    assert "'vllm' is not an executable on PATH" in messages(report, "error")
    assert "vllm.entrypoints.openai.api_server" in messages(report, "error")
    assert reader.calls == []  # no command, no --help


def test_a_module_that_is_not_installed_is_an_error(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, command=["{python}", "-m", "no_such_pkg.server", "--port", "{port}"]
    )
    assert "module 'no_such_pkg.server' is not installed" in messages(report, "error")


def test_a_submodule_is_found_without_importing_it(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, command=["{python}", "-m", "tuner.sim.no_such", "--port", "{port}"]
    )
    assert "not installed" in messages(report, "error")
    assert run_check(tmp_path).ok  # tuner.sim has a __main__.py


# --- NCCL ----------------------------------------------------------------------------------


def test_nccl_spelling_and_values_in_the_space(tmp_path: Path) -> None:
    report = run_check(
        tmp_path,
        env={"NCCL_ALOG": "allreduce:ring", "NCCL_DEBUG": "INFO"},
        params={
            "NCCL_ALGO": {"env": "NCCL_ALGO", "choices": ["default", "Ring", "allreduce:tree"]},
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "LL129"]},
        },
    )
    errors, warnings = messages(report, "error"), messages(report, "warning")
    assert "server.env.NCCL_ALOG" in errors and "did you mean NCCL_ALGO?" in errors
    assert "LL129" in errors
    assert "params.NCCL_ALGO: bare NCCL_ALGO='Ring'" in warnings
    assert "'allreduce:ring'" in warnings
    assert "allreduce:tree" not in errors + warnings


@pytest.mark.parametrize(
    ("name", "value", "level", "words"),
    [
        ("NCCL_ALGO", "Tree", "warning", "allreduce:tree"),
        ("NCCL_ALGO", "allreduce:tree;allgather:ring", None, ""),
        ("NCCL_ALGO", "^tree", "warning", "per-collective"),
        ("NCCL_ALGO", "allreduce:rnig", "error", "unknown value"),
        ("NCCL_ALGO", "allreduc:ring", "error", "unknown collective"),
        ("NCCL_PROTO", "^LL128", None, ""),
        ("NCCL_PROTO", "LL256", "error", "ll, ll128, simple"),
        ("NCCL_MIN_NCHANNELS", "4", None, ""),
        ("NCCL_MAX_NCHANNELS", "0", "error", "outside 1..64"),
        ("NCCL_MAX_NCHANNELS", "eight", "error", "not an integer"),
        ("NCCL_BUFFSIZE", "8388608", None, ""),
        ("NCCL_BUFFSIZE", "3000000", "warning", "power of two"),
        ("NCCL_NTHREADS", "256", None, ""),
        ("NCCL_NTHREADS", "300", "error", "64, 128, 256 or 512"),
        ("NCCL_P2P_LEVEL", "NVL", None, ""),
        ("NCCL_P2P_LEVEL", "3", "warning", "deprecated"),
        ("NCCL_P2P_LEVEL", "FAST", "error", "LOC, NVL"),
        ("NCCL_IB_DISABLE", "1", None, ""),
        ("NCCL_IB_DISABLE", "yes", "error", "0 or 1"),
        ("CUDA_DEVICE_MAX_CONNECTIONS", "1", None, ""),
        ("CUDA_DEVICE_MAX_CONNECTIONS", "64", "warning", "clamps"),
        ("CUDA_DEVICE_MAX_CONNECTIONS", "many", "error", "not an integer"),
        ("NCCL_MAX_NCHANELS", "8", "error", "did you mean NCCL_MAX_NCHANNELS?"),
        ("NCLL_PROTO", "LL", "error", "misspelling of NCCL_PROTO"),
        ("NCCL_SOMETHING_NEW_IN_3_0", "1", "warning", "not an NCCL variable tuner knows"),
        ("VLLM_CPU_KVCACHE_SPACE", "4", None, ""),
        ("TORCH_NCCL_BLOCKING_WAIT", "1", None, ""),
    ],
)
def test_nccl_variable_table(name: str, value: str, level: str | None, words: str) -> None:
    found = check_nccl_variable(name, value)
    if level is None:
        assert found == []
    else:
        assert [f[0] for f in found] == [level]
        assert words in found[0][1]


# --- port, CPUs, storage, model ------------------------------------------------------------


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


def write_model(tmp_path: Path, heads: int, kv: int) -> Path:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(
        json.dumps({"num_attention_heads": heads, "num_key_value_heads": kv})
    )
    return model


def test_a_baseline_the_model_rules_out_is_an_error(tmp_path: Path) -> None:
    model = write_model(tmp_path, heads=4, kv=2)
    report = run_check(tmp_path, command=[*SIM, "--model", str(model), "-tp", "3"])
    assert "the baseline cannot start: Total number of attention heads (4)" in messages(
        report, "error"
    )


def test_a_choice_the_model_rules_out_is_a_warning(tmp_path: Path) -> None:
    model = write_model(tmp_path, heads=4, kv=2)
    report = run_check(
        tmp_path,
        command=[*SIM, "--model", str(model)],
        params={"tp": {"args": ["-tp", "{value}"], "choices": ["default", 2, 3]}},
    )
    assert report.ok
    warnings = messages(report, "warning")
    assert "params.tp: 3 can never start" in warnings and "recorded as not launched" in warnings
    assert "2 can never" not in warnings
    assert "config read from" in messages(report, "ok")


def test_flags_can_be_left_unchecked(tmp_path: Path) -> None:
    reader = FakeHelp()
    space = load_space(space_file(tmp_path))
    check_space(space, storage=f"sqlite:///{tmp_path}/c.db", read_help=reader, check_flags=False)
    assert reader.calls == []


def test_the_report_as_text_puts_errors_first(tmp_path: Path) -> None:
    report = run_check(tmp_path, env={"NCCL_ALOG": "ring"})
    lines = report.lines()
    assert lines[0].startswith("ERROR server.env.NCCL_ALOG")
    assert lines[-1].endswith("fix the errors above before running")
    assert run_check(tmp_path).lines()[-1].endswith("ready to run")
