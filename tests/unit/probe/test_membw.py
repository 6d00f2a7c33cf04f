"""`tuner probe membw`: measured with torch where a GPU is, NVML's figure otherwise, or a
clear error; fakes stand in for torch and NVML (no GPU here)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.fakes import FakeGpu, FakeGpuBackend
from tuner.cli import app
from tuner.probe.membw import MembwOptions, membw
from tuner.probe.run import ProbeError
from tuner.telemetry.gpu import NullGpuBackend


class FakeTorch:
    """Enough of torch.cuda for the copy: each copy advances a clock by bytes / bandwidth."""

    uint8 = "uint8"

    def __init__(self, gbps: list[float], *, available: bool = True) -> None:
        self.gbps, self.now, self.current = gbps, 0.0, 0
        self.copies = 0
        torch = self

        class Tensor:
            def __init__(self, n: int) -> None:
                self.n = n

            def copy_(self, other: Tensor) -> None:
                torch.copies += 1
                torch.now += 2 * other.n / (torch.gbps[torch.current] * 1e9)

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                assert enable_timing
                self.t = 0.0

            def record(self) -> None:
                self.t = torch.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: Event) -> float:
                return (end.t - self.t) * 1e3

        @contextmanager
        def device(index: int) -> Any:
            torch.current = index
            yield

        self.empty = lambda n, dtype, device: Tensor(n)
        self.empty_like = lambda t: Tensor(t.n)
        self.cuda = SimpleNamespace(
            is_available=lambda: available,
            device_count=lambda: len(gbps),
            Event=Event,
            device=device,
            get_device_name=lambda i: f"Fake GPU {i}",
            empty_cache=lambda: None,
        )


OPTIONS = MembwOptions(size_bytes=1 << 28, repeats=3, iters=4, warmup=1)


def test_torch_measures_each_gpu_and_the_slowest_counts() -> None:
    torch = FakeTorch([1500.0, 1400.0])
    doc = membw(OPTIONS, torch=torch, backend=FakeGpuBackend())
    assert doc["source"] == "torch"
    assert [g["gbps"] for g in doc["gpus"]] == pytest.approx([1500.0, 1400.0])
    assert doc["memory_bandwidth_gbps"] == pytest.approx(1400.0)
    assert torch.copies == 2 * (1 + 3 * 4)  # warm-up, then repeats x iters, per GPU
    assert len(doc["gpus"][0]["samples"]) == 3


def test_without_a_gpu_for_torch_nvml_s_theoretical_figure_is_used_and_said() -> None:
    backend = FakeGpuBackend([FakeGpu(memory_bandwidth_gbps=1792.0)] * 2)
    doc = membw(OPTIONS, torch=FakeTorch([], available=False), backend=backend)
    assert doc["source"] == "nvml" and doc["memory_bandwidth_gbps"] == 1792.0
    assert "theoretical" in doc["method"] and "not measured" in doc["method"]
    assert backend.closed


def test_neither_torch_nor_nvml_is_a_clear_error() -> None:
    with pytest.raises(ProbeError) as err:
        membw(OPTIONS, torch=FakeTorch([], available=False), backend=NullGpuBackend("no NVML"))
    message = str(err.value)
    assert "torch.cuda.is_available() is False" in message and "(no NVML)" in message
    assert "probe: {memory_bandwidth_gbps: 1792}" in message


def test_nvml_without_the_figure_is_the_same_error() -> None:
    backend = FakeGpuBackend([FakeGpu(memory_bandwidth_gbps=None)])
    with pytest.raises(ProbeError, match="NVML reports no memory clock"):
        membw(OPTIONS, torch=FakeTorch([], available=False), backend=backend)


def test_the_command_prints_json_or_says_why_not(monkeypatch: pytest.MonkeyPatch) -> None:
    import tuner.probe.membw as module

    monkeypatch.setattr(module, "_import_torch", lambda: (None, "torch is not installed"))
    monkeypatch.setattr(module, "open_gpu_backend", lambda: FakeGpuBackend())
    result = CliRunner().invoke(app, ["probe", "membw", "--size", "256M"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["memory_bandwidth_gbps"] == 1792.0
    monkeypatch.setattr(module, "open_gpu_backend", lambda: NullGpuBackend("no NVIDIA GPU"))
    result = CliRunner().invoke(app, ["probe", "membw"])
    assert result.exit_code == 1 and "memory_bandwidth_gbps" in result.output
