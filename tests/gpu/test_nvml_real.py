"""NvmlGpuBackend on a real NVIDIA GPU; skipped where NVML or a GPU is missing."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

import pytest

from tuner.telemetry import GpuSampler, collect_inventory, summarize_gpu
from tuner.telemetry.gpu import GpuBackend, NvmlGpuBackend, open_gpu_backend

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def nvml() -> Iterator[GpuBackend]:
    backend = open_gpu_backend()
    if not backend.available:
        pytest.skip(backend.reason)
    assert isinstance(backend, NvmlGpuBackend)
    yield backend
    backend.close()


def test_static_facts(nvml: GpuBackend) -> None:
    assert nvml.device_count() >= 1
    info = nvml.info(0)
    assert info.name and info.name != "unknown"
    assert info.uuid.startswith(("GPU-", "MIG-"))
    assert info.memory_total_mib > 1024
    assert info.pcie_gen_max is None or 1 <= info.pcie_gen_max <= 6
    assert info.nvlink_links >= 0
    assert nvml.driver_version()
    assert re.fullmatch(r"\d+\.\d+", nvml.cuda_driver_version() or "")


def test_a_sample_has_the_basic_fields(nvml: GpuBackend) -> None:
    s = nvml.sample(0)
    assert abs(s.time_s - time.time()) < 5
    assert s.util_pct is not None and 0 <= s.util_pct <= 100
    assert s.memory_used_mib is not None and s.memory_used_mib >= 0
    assert s.temperature_c is not None and 0 < s.temperature_c < 120
    assert s.sm_clock_mhz is not None
    assert all(not r.startswith("unknown") for r in s.throttle_reasons), s.throttle_reasons


def test_memory_and_processes(nvml: GpuBackend) -> None:
    assert nvml.memory_used_mib(0) >= 0
    for proc in nvml.compute_processes(0):
        assert proc.pid > 0
        assert proc.used_memory_mib is None or proc.used_memory_mib >= 0
    assert os.getpid() not in {p.pid for p in nvml.compute_processes(0)}  # no CUDA here


def test_sampler_and_summary(nvml: GpuBackend) -> None:
    sampler = GpuSampler(nvml, interval_s=0.1).start()
    deadline = time.monotonic() + 10
    while len(sampler.records()) < 5 * nvml.device_count() and time.monotonic() < deadline:
        time.sleep(0.05)
    samples = sampler.stop()
    assert sampler.errors == 0, sampler.last_error
    summary = summarize_gpu(samples, output_tokens=1000, duration_s=1.0)
    assert summary.gpus == nvml.device_count()
    assert summary.power_mean_w is None or summary.power_mean_w > 0
    assert summary.temperature_max_c is not None


def test_inventory(nvml: GpuBackend) -> None:
    inv = collect_inventory(nvml)
    assert inv.gpu_count == nvml.device_count()
    assert inv.gpu_note is None
    assert inv.driver_version
