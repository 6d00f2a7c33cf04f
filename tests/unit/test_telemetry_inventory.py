"""The inventory: host facts always, GPU facts when there are GPUs, NCCL from the log."""

from __future__ import annotations

import io
import json
import socket

import pytest
from rich.console import Console

from tests.fakes import FakeGpu, FakeGpuBackend
from tuner.telemetry import (
    Inventory,
    collect_inventory,
    inventory_lines,
    parse_nccl_version,
    render_inventory,
    render_inventory_dict,
)
from tuner.telemetry.gpu import GpuInfo, NullGpuBackend

NO_GPU = "no NVIDIA GPU: GPU telemetry off"


def render(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(renderable)
    return out.getvalue()


def test_without_gpu_the_host_side_is_complete() -> None:
    inv = collect_inventory(NullGpuBackend(NO_GPU))
    assert inv.hostname == socket.gethostname()
    assert inv.cpu_count and inv.cpu_count >= 1
    assert inv.ram_total_gib and inv.ram_total_gib > 0
    assert inv.python_version.count(".") == 2
    assert inv.gpu_count == 0 and inv.gpus == () and inv.gpu_names == ()
    assert inv.driver_version is None and inv.cuda_driver_version is None
    assert inv.nvlink is None
    assert inv.gpu_note == NO_GPU
    assert inv.server_version is None and inv.nccl_version is None
    data = inv.to_dict()
    json.dumps(data)
    assert data["gpu_note"] == NO_GPU and data["gpus"] == []
    assert f"gpus: none ({NO_GPU})" in inventory_lines(inv)
    assert NO_GPU in render(render_inventory(inv))


def test_with_fake_gpus() -> None:
    backend = FakeGpuBackend(
        [FakeGpu(name="NVIDIA RTX PRO 6000"), FakeGpu(name="NVIDIA RTX PRO 6000")]
    )
    inv = collect_inventory(backend, log_text="INFO ... vLLM is using nccl==2.21.5\n")
    assert inv.gpu_count == 2
    assert inv.gpu_names == ("NVIDIA RTX PRO 6000", "NVIDIA RTX PRO 6000")
    assert inv.driver_version == "580.00-fake"
    assert inv.cuda_driver_version == "13.0"
    assert inv.nvlink is False
    assert inv.gpu_note is None
    assert inv.nccl_version == "2.21.5"
    assert inv.gpus[0].pcie_gen_max == 5
    data = inv.to_dict()
    json.dumps(data)
    assert data["gpus"][1]["index"] == 1
    assert data["gpu_names"] == ["NVIDIA RTX PRO 6000"] * 2
    text = render(render_inventory(inv))
    assert "2 x NVIDIA RTX PRO 6000" in text
    assert "Gen5 x16" in text
    assert "2.21.5" in text


def test_nvlink_is_seen() -> None:
    inv = collect_inventory(FakeGpuBackend([FakeGpu(nvlink_links=18), FakeGpu(nvlink_links=18)]))
    assert inv.nvlink is True


class HalfBrokenBackend(FakeGpuBackend):
    def info(self, index: int) -> GpuInfo:
        if index == 1:
            raise RuntimeError("GPU lost")
        return super().info(index)

    def driver_version(self) -> str | None:
        raise RuntimeError("driver gone")


def test_an_unreadable_gpu_or_version_does_not_lose_the_rest() -> None:
    inv = collect_inventory(HalfBrokenBackend())
    assert inv.gpu_count == 1
    assert inv.driver_version is None
    assert inv.cuda_driver_version == "13.0"


@pytest.mark.parametrize(
    ("log", "version"),
    [
        ("host:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.9\n", "2.27.3+cuda12.9"),
        ("NCCL version 2.18.1\n", "2.18.1"),
        ("INFO 05-01 12:00:00 pynccl.py:69] vLLM is using nccl==2.21.5\n", "2.21.5"),
        ("(VllmWorker rank=3) INFO ... vLLM is using nccl==2.26.2\n", "2.26.2"),
        ("nothing about it here\n", None),
        ("", None),
        (None, None),
    ],
)
def test_nccl_version_from_the_log(log: str | None, version: str | None) -> None:
    assert parse_nccl_version(log) == version


def test_a_stored_inventory_renders_again() -> None:
    inv = collect_inventory(FakeGpuBackend(), log_text="NCCL version 2.27.3+cuda12.9")
    data = json.loads(json.dumps(inv.to_dict()))  # as the store gives it back
    assert Inventory.from_dict(data) == inv
    assert "2.27.3+cuda12.9" in render(render_inventory_dict(data))


def test_an_inventory_from_another_version_still_renders() -> None:
    data = {
        "hostname": "box",
        "gpus": [
            {
                "index": 0,
                "name": "H200",
                "uuid": "GPU-1",
                "memory_total_mib": 143771.0,
                "future_field": 1,
            }
        ],
        "future": "x",
    }
    inv = Inventory.from_dict(data)
    assert inv.gpu_names == ("H200",) and inv.gpu_count == 1 and inv.driver_version is None
    assert "H200" in render(render_inventory_dict(data))
