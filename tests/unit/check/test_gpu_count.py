"""tuner.check.gpu_count: a GPU server's layout against the GPUs NVML finds."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeTopologyNvml
from tests.unit.check.helpers import SIM, space_file
from tuner.check import CheckReport, check_space
from tuner.check.gpu_count import gpus_needed
from tuner.space.spec import load_space
from tuner.telemetry.topology import TopologyRead, read_topology

SERVE = ["vllm", "serve", "org/model", "--port", "{port}"]


def no_driver() -> TopologyRead:
    """NVML absent, as on a machine without an NVIDIA driver (this one)."""
    nvml = FakeTopologyNvml(0, init_error=FakeTopologyNvml.NVMLError_LibraryNotFound())
    return read_topology(nvml, run_smi=None)


def nvml_with(gpus: int) -> TopologyRead:
    return read_topology(FakeTopologyNvml(gpus), run_smi=None)


def check(tmp_path: Path, topo: TopologyRead, command: list[str], **sections: Any) -> CheckReport:
    space = load_space(space_file(tmp_path, command=command, **sections))
    return check_space(
        space, storage=f"sqlite:///{tmp_path}/c.db", check_flags=False, topology=topo
    )


def gpu_items(report: CheckReport) -> list[tuple[str, str, str]]:
    """The items of this check: those that speak of the GPUs a layout needs."""
    return [
        (i.level, i.key, i.message) for i in report.items if re.search(r"needs \d+ GPU", i.message)
    ]


@pytest.mark.parametrize(
    ("args", "gpus", "words"),
    [
        ([], 1, "TP=1"),
        (["--tensor-parallel-size", "8"], 8, "TP=8"),
        (["-tp", "4", "-pp", "2"], 8, "TP=4 x PP=2"),
        (["-tp", "2", "--data-parallel-size", "2"], 4, "TP=2 x DP=2"),
        (["-tp=2", "-dp", "4", "-tp", "1"], 4, "TP=1 x DP=4"),  # the last -tp wins
    ],
)
def test_the_gpus_a_layout_needs(args: list[str], gpus: int, words: str) -> None:
    assert gpus_needed([*SERVE, *args]) == (gpus, words)


def test_without_nvml_a_gpu_layout_is_a_warning_naming_why(tmp_path: Path) -> None:
    report = check(tmp_path, no_driver(), [*SERVE, "--tensor-parallel-size", "8"])
    assert gpu_items(report) == [
        (
            "warning",
            "server.command",
            "TP=8 needs 8 GPUs; no GPU found here (NVML not found (no NVIDIA driver)): "
            "the launch will fail on this host",
        )
    ]


def test_with_nvml_fewer_gpus_than_the_layout_is_an_error(tmp_path: Path) -> None:
    report = check(tmp_path, nvml_with(4), [*SERVE, "-tp", "4", "-pp", "2"])
    [(level, key, message)] = gpu_items(report)
    assert (level, key) == ("error", "server.command")
    assert message.startswith("TP=4 x PP=2 needs 8 GPUs; 4 found here (from nvml)")
    assert "lower the layout in server.command, or run on a host with 8 GPUs" in message
    assert not report.ok


def test_a_layout_that_fits_says_nothing_but_a_param_value_beyond_it_warns(
    tmp_path: Path,
) -> None:
    tp = {"tp": {"args": ["-tp", "{value}"], "choices": ["default", 4, 16]}}
    report = check(tmp_path, nvml_with(8), [*SERVE, "-tp", "8"], params=tp)
    [(level, key, message)] = gpu_items(report)
    assert (level, key) == ("warning", "params.tp")
    assert message.startswith("16 can never start with the other params at default: ")
    assert "TP=16 needs 16 GPUs, 8 found here" in message
    assert "set server.gpus: 8" in message
    # with server.gpus, the sweep already refuses it and check_model says so: said once
    report = check(tmp_path, nvml_with(8), [*SERVE, "-tp", "8"], params=tp, gpus=8)
    assert [i.key for i in report.warnings if "16 can never start" in i.message] == ["params.tp"]


@pytest.mark.parametrize(
    "command",
    [
        [*SIM, "--tensor-parallel-size", "8"],  # the simulator: no GPU needed
        [*SERVE[:2], "{space_dir}/../.cache/tiny-llama", "-tp", "2", "--port", "{port}"],  # CPU
        ["sglang", "launch", "--tensor-parallel-size", "8", "--port", "{port}"],  # not vLLM
    ],
)
@pytest.mark.parametrize("topo", [no_driver, lambda: nvml_with(1)])
def test_servers_that_need_no_gpu_are_not_counted(
    tmp_path: Path, command: list[str], topo: Any
) -> None:
    assert gpu_items(check(tmp_path, topo(), command)) == []
