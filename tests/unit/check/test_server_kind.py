"""tuner.check.server_kind: which server a space runs, and the advice each kind gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.check.helpers import SIM, FakeHelp, messages, run_check, space_file
from tuner.check.server_kind import server_kind
from tuner.space.model_limits import baseline_argv
from tuner.space.spec import load_space

TINY = "{space_dir}/../.cache/tiny-llama"
API = "vllm.entrypoints.openai.api_server"


def kind_of(tmp_path: Path, command: list[str], **sections: Any) -> str:
    space = load_space(space_file(tmp_path, command=[*command, "--port", "{port}"], **sections))
    return server_kind(space, baseline_argv(space)[0])


@pytest.mark.parametrize(
    ("command", "sections", "kind"),
    [
        (SIM, {}, "sim"),
        (["vllm", "serve", "org/model", "-tp", "8"], {}, "vllm-gpu"),
        (["/opt/venv/bin/vllm", "serve", "org/model"], {}, "vllm-gpu"),
        # The module form alone is vLLM's entry point on GPU hosts too.
        (["{python}", "-m", API, "--model", "org/model"], {}, "vllm-gpu"),
        # The tiny model of scripts/make_tiny_model.py, however vLLM is started.
        (["{python}", "-m", API, "--model", TINY], {}, "vllm-cpu"),
        (["vllm", "serve", TINY], {}, "vllm-cpu"),
        # A VLLM_CPU_* variable, fixed or as a param: only the CPU backend reads them.
        (
            ["{python}", "-m", API, "--model", "org/m"],
            {"env": {"VLLM_CPU_KVCACHE_SPACE": "1"}},
            "vllm-cpu",
        ),
        (
            ["vllm", "serve", "org/m"],
            {"params": {"kv": {"env": "VLLM_CPU_KVCACHE_SPACE", "choices": ["default", 2]}}},
            "vllm-cpu",
        ),
        (["sglang", "launch", "--model", "org/m"], {}, "other"),
        # A vLLM virtualenv's python running a script of one's own is not vLLM.
        (["/opt/vllm-venv/bin/python", "server.py"], {}, "other"),
    ],
)
def test_the_kind_of_server(
    tmp_path: Path, command: list[str], sections: dict[str, Any], kind: str
) -> None:
    assert kind_of(tmp_path, command, **sections) == kind


def test_a_stamped_tiny_model_in_any_folder_is_a_cpu_space(tmp_path: Path) -> None:
    model = tmp_path / "my-model"
    model.mkdir()
    command = ["{python}", "-m", API, "--model", str(model)]
    assert kind_of(tmp_path, command) == "vllm-gpu"
    (model / ".tiny-model-stamp").write_text("{}")
    assert kind_of(tmp_path, command) == "vllm-cpu"


def test_a_gpu_server_without_vllm_is_told_to_install_or_activate_it(tmp_path: Path) -> None:
    reader = FakeHelp()
    report = run_check(
        tmp_path,
        reader,
        command=["vllm", "serve", "org/m", "-tp", "8", "--port", "{port}"],
        env={"PATH": str(tmp_path)},
    )
    [error] = [i for i in report.errors if i.key == "server.command"]
    assert error.message.startswith("'vllm' is not an executable on PATH: install vLLM")
    assert "`pip install vllm`" in error.message and "activate the environment" in error.message
    assert "that environment's torch" in error.message
    everything = "\n".join(str(i) for i in report.items)
    assert "CPU build" not in everything and "setup-vllm-cpu" not in everything
    assert reader.calls == []  # no command, no --help
    flags = [i for i in report.items if i.key == "flags"]
    assert [(i.level, i.message.split(";")[0]) for i in flags] == [
        ("warning", "flags not checked: the server command was not found")
    ]


def test_a_cpu_space_without_vllm_gets_the_cpu_builds_advice(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, command=["vllm", "serve", TINY, "--port", "{port}"], env={"PATH": str(tmp_path)}
    )
    errors = messages(report, "error")
    assert "vLLM's CPU build installs no working `vllm` command" in errors
    assert f'["{{python}}", -m, {API}, ...]' in errors
    assert "bash scripts/setup-vllm-cpu.sh" in errors
    # the missing tiny model: the recipe that builds it
    assert "build it (the tiny model of vllm-cpu.yaml" in errors


@pytest.mark.parametrize(
    ("model", "advice", "not_said"),
    [
        (TINY, "(for vLLM's CPU build: bash scripts/setup-vllm-cpu.sh)", "pip install vllm"),
        ("org/m", ": install vLLM (`pip install vllm`)", "setup-vllm-cpu"),
    ],
)
def test_a_missing_vllm_module_gets_the_advice_of_its_kind(
    tmp_path: Path, model: str, advice: str, not_said: str
) -> None:
    # A module name no Python has (vllm may be installed here: the vllm tier's .venv).
    command = ["{python}", "-m", "vllm_not_here.api_server", "--model", model, "--port", "{port}"]
    report = run_check(tmp_path, command=command)
    errors = messages(report, "error")
    assert "module 'vllm_not_here.api_server' is not installed in" in errors
    assert advice in errors and not_said not in errors


def test_a_missing_module_of_another_server_gets_no_vllm_advice(tmp_path: Path) -> None:
    report = run_check(
        tmp_path, command=["{python}", "-m", "no_such_pkg.server", "--port", "{port}"]
    )
    errors = messages(report, "error")
    assert "install it there, or run tuner from the environment that has it" in errors
    assert "vLLM" not in errors and "setup-vllm-cpu" not in errors
