"""GPU hygiene with a fake backend: idle before a launch, memory back after a stop."""

from __future__ import annotations

import os
import time

import pytest

from tests.fakes import FakeGpu, FakeGpuBackend
from tuner.errors import LaunchError
from tuner.launcher.gpu_hygiene import check_gpu_memory_back, ensure_gpus_idle, memory_snapshot
from tuner.telemetry.gpu import GpuProcess

NOT_VISIBLE = 2**31 - 3  # no such pid in our namespace


def test_idle_gpus_pass_at_once() -> None:
    started = time.monotonic()
    ensure_gpus_idle(FakeGpuBackend(), None, max_memory_mib=1024, timeout_s=5, poll_s=1)
    assert time.monotonic() - started < 0.5


def test_busy_gpu_is_named_after_the_timeout() -> None:
    gpu = FakeGpuBackend([FakeGpu(), FakeGpu(memory_used_mib=90_000.0)])
    gpu.gpus[1].processes = [
        GpuProcess(pid=os.getpid(), used_memory_mib=89_000.0),
        GpuProcess(pid=NOT_VISIBLE, used_memory_mib=None),
    ]
    started = time.monotonic()
    with pytest.raises(LaunchError) as caught:
        ensure_gpus_idle(gpu, None, max_memory_mib=1024, timeout_s=0.2, poll_s=0.05)
    assert 0.2 <= time.monotonic() - started < 1.0
    reason = caught.value.reason
    assert "GPU 1 uses 90000 MiB (limit 1024 MiB)" in reason
    assert f"pid {os.getpid()} (" in reason and "with 89000 MiB" in reason
    assert "python" in reason or "pytest" in reason  # our command line
    assert f"pid {NOT_VISIBLE} ((not visible)) with ? MiB" in reason
    assert "GPU 0" not in reason
    assert "does not stop processes it did not start" in reason
    assert gpu.gpus[1].processes  # nothing was killed (it is us)


def test_memory_that_drains_within_the_timeout_passes() -> None:
    gpu = FakeGpuBackend()
    gpu.memory_script[0] = [40_000.0, 20_000.0, 3_000.0, 100.0]
    ensure_gpus_idle(gpu, [0], max_memory_mib=1024, timeout_s=5, poll_s=0.01)
    assert gpu.gpus[0].memory_used_mib == 100.0


def test_only_the_named_devices_are_checked() -> None:
    gpu = FakeGpuBackend([FakeGpu(), FakeGpu(memory_used_mib=90_000.0)])
    ensure_gpus_idle(gpu, [0], max_memory_mib=1024, timeout_s=0.1, poll_s=0.05)


def test_unavailable_backend_is_not_checked() -> None:
    gpu = FakeGpuBackend([FakeGpu(memory_used_mib=90_000.0)])
    gpu.available = False  # type: ignore[misc]
    ensure_gpus_idle(gpu, None, max_memory_mib=1, timeout_s=0.1)
    assert memory_snapshot(gpu, None) == {}
    assert check_gpu_memory_back(gpu, {0: 0.0}, tolerance_mib=1, timeout_s=1) == (None, [])


def test_memory_back_after_stop() -> None:
    gpu = FakeGpuBackend()
    baseline = memory_snapshot(gpu, None)
    gpu.memory_script[1] = [50_000.0, 10_000.0, 300.0]
    ok, problems = check_gpu_memory_back(gpu, baseline, tolerance_mib=512, timeout_s=2, poll_s=0.01)
    assert ok is True and problems == []


def test_memory_that_never_comes_back() -> None:
    gpu = FakeGpuBackend()
    baseline = memory_snapshot(gpu, [0, 1])
    gpu.gpus[0].memory_used_mib = 96_000.0
    gpu.gpus[0].processes = [GpuProcess(pid=NOT_VISIBLE, used_memory_mib=95_500.0)]
    passes: list[list[int]] = []

    def second_pass(gpus: list[int]) -> list[str]:
        passes.append(gpus)
        return []

    ok, problems = check_gpu_memory_back(
        gpu, baseline, tolerance_mib=512, timeout_s=0.2, poll_s=0.02, second_pass=second_pass
    )
    assert ok is False
    assert passes == [[0]]
    assert len(problems) == 1
    assert problems[0].startswith(
        "GPU 0 still uses 96000 MiB, 96000 MiB more than before the launch (tolerance 512 MiB)"
    )
    assert f"pid {NOT_VISIBLE} ((not visible)) with 95500 MiB" in problems[0]


class BlindGpuBackend(FakeGpuBackend):
    """A GPU that cannot report its memory (NVML's GpuQueryError)."""

    def memory_used_mib(self, index: int) -> float:
        raise RuntimeError(f"GPU {index}: NVML cannot report used memory")


def test_unknown_memory_is_not_idle() -> None:
    with pytest.raises(LaunchError, match="GPU 0 cannot report its memory"):
        ensure_gpus_idle(BlindGpuBackend(), [0], max_memory_mib=1024, timeout_s=0.05)
    assert memory_snapshot(BlindGpuBackend(), None) == {}  # nothing to compare later


def test_unknown_memory_after_stop_is_not_back() -> None:
    ok, problems = check_gpu_memory_back(
        BlindGpuBackend(), {0: 0.0}, tolerance_mib=512, timeout_s=0.05, poll_s=0.01
    )
    assert ok is False
    assert problems == ["GPU 0 cannot report its memory 0.05 s after the stop"]
