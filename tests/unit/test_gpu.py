"""The GPU seam's pure parts: throttle decoding, version formatting, the null backend."""

from __future__ import annotations

import sys

import pytest

from tests.fakes import FakeGpuBackend
from tuner.telemetry.gpu import (
    GpuBackend,
    NullGpuBackend,
    decode_throttle_reasons,
    format_cuda_version,
    open_gpu_backend,
)


def test_decode_names_the_throttling_bits_in_order() -> None:
    assert decode_throttle_reasons(0x4 | 0x8 | 0x20 | 0x40 | 0x80) == (
        "sw_power_cap",
        "hw_slowdown",
        "sw_thermal",
        "hw_thermal",
        "power_brake",
    )


def test_decode_ignores_idle_and_clock_settings() -> None:
    assert decode_throttle_reasons(0x1 | 0x2 | 0x100) == ()
    assert decode_throttle_reasons(0) == ()


def test_decode_keeps_an_unknown_bit_visible() -> None:
    assert decode_throttle_reasons(0x4 | 0x8000) == ("sw_power_cap", "unknown_0x8000")


@pytest.mark.parametrize(("value", "text"), [(12090, "12.9"), (13000, "13.0"), (11080, "11.8")])
def test_cuda_version_format(value: int, text: str) -> None:
    assert format_cuda_version(value) == text


def test_null_backend_has_no_gpus_and_says_why() -> None:
    backend = NullGpuBackend("no NVIDIA GPU: GPU telemetry off")
    assert isinstance(backend, GpuBackend)
    assert backend.available is False
    assert backend.device_count() == 0
    assert backend.reason == "no NVIDIA GPU: GPU telemetry off"
    assert backend.compute_processes(0) == []
    assert backend.driver_version() is None
    assert backend.cuda_driver_version() is None
    with pytest.raises(IndexError, match="GPU telemetry off"):
        backend.sample(0)
    with pytest.raises(IndexError):
        backend.info(0)
    backend.close()


def test_fake_backend_satisfies_the_protocol() -> None:
    assert isinstance(FakeGpuBackend(), GpuBackend)


def test_open_without_the_nvml_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    backend = open_gpu_backend()
    assert backend.available is False
    assert backend.reason == "nvidia-ml-py not installed: GPU telemetry off"


def test_open_on_this_machine_never_raises() -> None:
    backend = open_gpu_backend()
    try:
        if not backend.available:
            assert backend.reason.endswith("GPU telemetry off")
        else:
            assert backend.device_count() >= 1
    finally:
        backend.close()
