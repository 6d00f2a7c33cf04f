"""Every deployment format, read back by its own parser, gives the exact values back.

Values with spaces, ``$``, both quotes, ``%``, backslashes, ``;`` and ``#``: a shell
sources the env file, systemd itself parses the drop-in and the env file, shlex and bash
split the args and docker lines, a YAML loader and vLLM's config rule read vllm-config.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from tests.unit import deploy_parsers as parsers
from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, final_block, hand_study
from tuner.errors import ConfigError
from tuner.secrets import REDACTED
from tuner.views.best import ConfigEntry, best_report
from tuner.views.best_print import print_best
from tuner.views.deploy import DEPLOY_FORMATS, deployment, deployment_text
from tuner.views.vllm_config import vllm_options

AWKWARD = [
    "plain",
    "with space",
    "$HOME",
    "${HOME}x",
    "$$",
    "it's",
    'say "hi"',
    "100%",
    "%h%n",
    "back\\slash",
    "ends with\\",
    "a'b\"c$d%e\\f g",
    "",
    "x=y",
    ";",
    "#not a comment",
    "*",
    "~",
    "`date`",
    "tab-free  double  spaces ",
]
ENV = {f"V{i}": value for i, value in enumerate(AWKWARD)}
ARGS = tuple(w for i, value in enumerate(AWKWARD) for w in (f"--opt-{i}", value))


def _entry(**fields: Any) -> ConfigEntry:
    base: dict[str, Any] = dict(
        trial=7,
        trials=(7,),
        config="c",
        params={},
        env=ENV,
        args=ARGS,
        value=1.0,
        stderr=0.1,
        interval=None,
        launches=2,
        command=("/usr/bin/srv", "--port", "8000", *ARGS),
    )
    return ConfigEntry(**{**base, **fields})


def test_the_env_file_reads_back_the_same_in_a_shell(tmp_path: Path) -> None:
    path = tmp_path / "tuner.env"
    path.write_text(deployment_text(_entry(), "env") + "\n")
    assert parsers.bash_sourced(path, list(ENV)) == ENV


def test_the_env_file_reads_back_the_same_in_systemd(tmp_path: Path) -> None:
    path = tmp_path / "tuner.env"
    path.write_text(deployment_text(_entry(), "env") + "\n")
    matches = parsers.systemd_env_file_matches(path, ENV)
    if matches is None:
        pytest.skip("no systemd-analyze with ConditionOSRelease=KEY=VALUE (systemd >= 249)")
    assert matches, path.read_text()
    # The check can fail: one value off and systemd says so.
    assert parsers.systemd_env_file_matches(path, {**ENV, "V1": "with  space"}) is False


def test_systemd_reads_the_drop_in_back_exactly() -> None:
    entry = _entry()
    dumped = parsers.systemd_unit_dump(deployment_text(entry, "systemd"))
    if isinstance(dumped, str):
        pytest.skip(dumped)
    assert dumped["env"] == ENV, dumped["warnings"]
    # The drop-in's empty ExecStart= clears the unit's own command: one command is left.
    assert len(dumped["exec"]) == 1, dumped["warnings"]
    assert parsers.systemd_exec_argv(dumped["exec"][0]) == list(entry.command)


def test_a_program_name_systemd_would_read_as_a_prefix_is_refused() -> None:
    # systemd strips a leading "-" (ignore failure) even from "-srv" in quotes.
    entry = _entry(env={}, args=(), command=("-srv", "50%"))
    with pytest.raises(ConfigError, match="'-srv': systemd reads a leading '-'.*absolute path"):
        deployment_text(entry, "systemd")
    assert deployment_text(entry, "args") == ""


def test_args_split_back_in_shlex_and_bash() -> None:
    line = deployment_text(_entry(), "args")
    assert shlex.split(line) == list(ARGS)
    assert parsers.bash_words(line) == list(ARGS)


def test_docker_flags_split_back_into_pairs() -> None:
    line = deployment_text(_entry(), "docker")
    for words in (shlex.split(line), parsers.bash_words(line)):
        assert words[::2] == ["-e"] * len(ENV)
        assert dict(w.split("=", 1) for w in words[1::2]) == ENV


def test_vllm_config_gives_vllm_the_same_flags() -> None:
    text = deployment_text(_entry(), "vllm-config")
    loaded = yaml.safe_load(text)
    assert parsers.vllm_config_argv(loaded) == list(ARGS)
    assert "environment variables cannot go in a --config file" in text
    assert "#   V1=with space" in text


def test_vllm_config_names_flags_switches_short_options_and_numbers() -> None:
    args = (
        "--max-num-seqs",
        "256",
        "--enforce-eager",
        "--gpu_memory_utilization=0.90",
        "-O3",
        "-tp",
        "2",
        "--dtype",
        "true",
        "--swap",
        "-1",
        "-x",
        "--compilation-config.level=3",
    )
    options, leftover = vllm_options(args)
    assert options == {
        "max-num-seqs": 256,
        "enforce-eager": True,
        "gpu-memory-utilization": "0.90",
        "optimization-level": 3,
        "tensor-parallel-size": 2,
        "dtype": "true",
        "swap": -1,
        "compilation-config.level": 3,
    }
    assert leftover == ["-x"]
    text = deployment_text(_entry(env={}, args=args), "vllm-config")
    assert "max-num-seqs: 256" in text and "enforce-eager: true" in text
    loaded = yaml.safe_load(text)
    assert loaded["dtype"] == "true" and loaded["gpu-memory-utilization"] == "0.90"
    assert "pass on the command line: -x" in text
    assert "environment variables" not in text


@pytest.mark.parametrize("fmt", DEPLOY_FORMATS)
@pytest.mark.parametrize("where", ["env", "args"])
def test_a_newline_is_refused_with_what_to_change(fmt: str, where: str) -> None:
    entry = _entry(env={"NCCL_X": "a\nb"}) if where == "env" else _entry(args=("--x", "a\nb"))
    with pytest.raises(ConfigError, match="control character.*space file"):
        deployment_text(entry, fmt)
    # JSON carries any string: the deploy key keeps the value as it is.
    assert "a\nb" in [*deployment(entry).env.values(), *deployment(entry).args]


def test_an_env_name_no_shell_can_set_is_refused() -> None:
    with pytest.raises(ConfigError, match="'A.B': not a name a shell or systemd can set"):
        deployment_text(_entry(env={"A.B": "1"}), "env")


def test_secrets_print_as_stars_with_what_to_do(tmp_path: Path) -> None:
    entry = _entry(
        env={"HF_TOKEN": REDACTED},
        args=("--api-key", REDACTED),
        command=("srv", "--api-key", REDACTED),
    )
    env_text = deployment_text(entry, "env")
    assert "HF_TOKEN='***'" in env_text and "# HF_TOKEN: secret, not kept by tuner" in env_text
    unit = deployment_text(entry, "systemd")
    assert "# --api-key: secret" in unit and 'Environment="HF_TOKEN=***"' in unit
    assert "# api-key: secret" in deployment_text(entry, "vllm-config")
    assert deployment(entry).secrets == [
        "HF_TOKEN: secret, not kept by tuner: put its value in place of ***",
        "--api-key: secret, not kept by tuner: put its value in place of ***",
    ]


FAST = {"NCCL_PROTO": "LL", "compilation": 3}
SLOWER_SIMPLER = {"NCCL_PROTO": "LL"}


def test_which_picks_best_or_recommended_and_json_adds_the_deployment(tmp_path: Path) -> None:
    storage = hand_study(
        tmp_path,
        [
            BASELINE,
            BASELINE_AGAIN,
            (FAST, [88.0, 88.3, 88.1]),
            (FAST, [87.9, 88.2, 88.4]),
            (SLOWER_SIMPLER, [88.0, 88.2, 88.0]),
            (SLOWER_SIMPLER, [88.1, 87.9, 88.2]),
            *final_block(SLOWER_SIMPLER, [88.1, 88.0, 88.2]),
        ],
    )
    report = best_report(storage, "hand")
    assert report.best is not None and report.recommended is not None
    assert report.best.args == ("-O3",) and report.recommended.args == ()
    assert report.recommended.command == ("srv", "--port", "8000")
    assert report.best.command == ("srv", "--port", "8000", "-O3")

    def shown(fmt: str, which: str) -> str:
        console = Console(record=True, width=200)
        print_best(report, fmt, console, which=which)
        return console.export_text()

    assert shown("args", "best").strip() == "-O3"
    assert shown("args", "recommended").strip() == ""
    unit = shown("systemd", "best")
    assert "ExecStart=srv --port 8000 -O3" in unit and "(best)" in unit
    assert "{port} is 8000 here (the sweep chose a free port per launch)" in unit
    document = json.loads(shown("json", "best"))
    assert list(document)[-1] == "deploy"
    assert document["deploy"]["which"] == "best"
    assert document["deploy"]["args"] == ["-O3"]
    assert document["deploy"]["command"] == ["srv", "--port", "8000", "-O3"]
    assert document["deploy"]["vllm_config"] == {"optimization-level": 3}
    assert json.loads(shown("json", "recommended"))["deploy"]["env"] == {"NCCL_PROTO": "LL"}
    with pytest.raises(ConfigError, match="--which 'worst'"):
        print_best(report, "env", Console(record=True), which="worst")
