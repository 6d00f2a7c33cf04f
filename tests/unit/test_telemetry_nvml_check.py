"""benchmarks/nvml_check.py run end to end against a fake torch and a fake GPU.

The script only runs for real on a lent GPU machine, once; this dry run makes sure
its own logic (the checks, the formatting, the exit status) holds before then.
"""

from __future__ import annotations

import os
import time
import types
from typing import Any

import pytest

import tuner.telemetry.gpu as gpu_module
from tests.fakes import FakeGpu, FakeGpuBackend
from tests.unit.benchmark_scripts import load_benchmark
from tuner.telemetry import gpu_sampler
from tuner.telemetry import gpu_summary as summary
from tuner.telemetry.gpu import GpuProcess, NullGpuBackend

MIB = 1024 * 1024
NO_GPU = "no NVIDIA GPU: GPU telemetry off"


def load_script() -> types.ModuleType:
    return load_benchmark("nvml_check.py", "nvml_check")


class FakeCuda:
    """Just enough of torch.cuda: a caching allocator whose memory NVML can see.

    ``leak_mib`` is memory that stays after the second ``empty_cache`` (the one after the
    loop), like a driver or allocator that does not give memory back.
    """

    def __init__(self, leak_mib: float = 0.0) -> None:
        self.live = 0
        self.cached = 0
        self.leak_mib = leak_mib
        self.empty_cache_calls = 0

    def is_available(self) -> bool:
        return True

    def is_bf16_supported(self) -> bool:
        return True

    def get_device_properties(self, index: int) -> Any:
        return types.SimpleNamespace(uuid="fake-1")  # NVML's "GPU-fake-1"

    def synchronize(self) -> None:
        pass

    def empty_cache(self) -> None:
        self.cached = 0
        self.empty_cache_calls += 1

    def used_mib(self) -> float:
        leak = self.leak_mib if self.empty_cache_calls >= 2 else 0.0
        return 500.0 + (self.live + self.cached) / MIB + leak


class FakeTensor:
    def __init__(self, cuda: FakeCuda, nbytes: int) -> None:
        self.cuda, self.nbytes = cuda, nbytes
        cuda.live += nbytes

    def __matmul__(self, other: FakeTensor) -> FakeTensor:
        return FakeTensor(self.cuda, self.nbytes)

    def sum(self) -> FakeTensor:
        return FakeTensor(self.cuda, 2)

    def item(self) -> float:
        return 0.0

    def __del__(self) -> None:
        self.cuda.live -= self.nbytes
        self.cuda.cached += self.nbytes


def fake_torch(cuda: FakeCuda) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.cuda = cuda
    torch.bfloat16, torch.float16, torch.uint8 = "torch.bfloat16", "torch.float16", "torch.uint8"
    size = {"torch.bfloat16": 2, "torch.float16": 2, "torch.uint8": 1}
    torch.device = lambda name: name

    def make(*shape: int, device: Any = None, dtype: Any = "torch.float16") -> FakeTensor:
        n = 1
        for d in shape:
            n *= d
        return FakeTensor(cuda, n * size[dtype])

    torch.ones = torch.randn = torch.empty = torch.zeros = make
    return torch


class TorchVisibleGpus(FakeGpuBackend):
    """GPU 1 is cuda:0; its memory is the fake allocator's, and this process may hold it."""

    def __init__(self, cuda: FakeCuda, *, list_own_pid: bool = True) -> None:
        super().__init__([FakeGpu(util_pct=99.0, power_w=400.0) for _ in range(2)])
        self.cuda = cuda
        self.list_own_pid = list_own_pid

    def memory_used_mib(self, index: int) -> float:
        return self.cuda.used_mib() if index == 1 else 0.0

    def compute_processes(self, index: int) -> list[GpuProcess]:
        pid = os.getpid() if self.list_own_pid else 999_999
        return [GpuProcess(pid, self.memory_used_mib(index))] if index == 1 else []


def run(
    capsys: pytest.CaptureFixture[str],
    *,
    leak_mib: float = 0.0,
    list_own_pid: bool = True,
    container: bool = False,
) -> tuple[int, str]:
    script = load_script()
    script.BUSY_S = 0.3
    script.MEMORY_WAIT_S = 0.2
    script.in_container = lambda: container
    cuda = FakeCuda(leak_mib)
    backend = TorchVisibleGpus(cuda, list_own_pid=list_own_pid)
    code = script.run_checks(fake_torch(cuda), backend, gpu_sampler, summary, time.monotonic())
    return code, capsys.readouterr().out


def test_all_checks_pass_on_a_well_behaved_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys)
    assert code == 0, out
    assert "== cuda:0 is NVML GPU 1" in out
    assert "FAIL" not in out
    assert "PASS  own pid listed as a compute process" in out
    assert "PASS  NVML sees torch's allocation" in out
    assert "PASS  GPU busy while the loop runs" in out
    assert "PASS  memory back near baseline" in out
    assert "all checks passed" in out


def test_memory_that_does_not_come_back_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, leak_mib=4096.0)
    assert code == 1
    assert "FAIL  memory back near baseline" in out
    assert "FAILED: memory back near baseline" in out


def test_own_pid_missing_outside_a_container_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, list_own_pid=False, container=False)
    assert code == 1
    assert "FAIL  own pid listed" in out


def test_own_pid_missing_in_a_container_warns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, list_own_pid=False, container=True)
    assert code == 0, out
    assert "WARN  own pid not listed (container" in out


def test_without_a_gpu_it_skips(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script()
    monkeypatch.setattr(gpu_module, "open_gpu_backend", lambda: NullGpuBackend(NO_GPU))
    assert script.main() == 0
    out = capsys.readouterr().out
    assert f"skipped: {NO_GPU}" in out
    assert "== inventory" in out
