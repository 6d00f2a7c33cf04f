"""The narrow seam to the GPUs: a ``GpuBackend`` protocol, NVML behind it, nothing without it.

Everything else in tuner (launcher hygiene, telemetry, inventory) talks to a
``GpuBackend``, so tests drive those paths with a fake (a busy GPU, memory that
never comes back, a throttling GPU) and a machine without NVIDIA GPUs gets
``NullGpuBackend``. ``open_gpu_backend()`` picks the real one when NVML loads.

The protocol and its facts are in tuner/telemetry/gpu_types.py, the NVML backend (each
call guarded on its own) in tuner/telemetry/nvml_backend.py; their names are importable
from here, the seam's one address.
"""

from __future__ import annotations

from typing import Any

from tuner.telemetry.gpu_types import GpuBackend, GpuInfo, GpuProcess, GpuQueryError, GpuSample
from tuner.telemetry.nvml_backend import (
    NON_THROTTLING_REASONS,
    THROTTLE_REASON_BITS,
    NvmlGpuBackend,
    decode_throttle_reasons,
    format_cuda_version,
)

__all__ = [
    "NON_THROTTLING_REASONS",
    "THROTTLE_REASON_BITS",
    "GpuBackend",
    "GpuInfo",
    "GpuProcess",
    "GpuQueryError",
    "GpuSample",
    "NullGpuBackend",
    "NvmlGpuBackend",
    "decode_throttle_reasons",
    "format_cuda_version",
    "init_failure_reason",
    "open_gpu_backend",
]


class NullGpuBackend:
    """No GPUs: what tuner uses where NVML is missing or sees no devices.

    ``reason`` is one line for the user, e.g. "no NVIDIA GPU: GPU telemetry off".
    """

    available = False

    def __init__(self, reason: str = "GPU telemetry off") -> None:
        self.reason = reason

    def device_count(self) -> int:
        return 0

    def info(self, index: int) -> GpuInfo:
        raise IndexError(f"no GPU {index}: {self.reason}")

    def memory_used_mib(self, index: int) -> float:
        raise IndexError(f"no GPU {index}: {self.reason}")

    def compute_processes(self, index: int) -> list[GpuProcess]:
        return []

    def sample(self, index: int) -> GpuSample:
        raise IndexError(f"no GPU {index}: {self.reason}")

    def driver_version(self) -> str | None:
        return None

    def cuda_driver_version(self) -> str | None:
        return None

    def close(self) -> None:
        pass


def open_gpu_backend() -> GpuBackend:
    """NVML when it starts and sees at least one GPU, else ``NullGpuBackend`` with the reason.

    Never raises: a machine without NVIDIA GPUs is a supported machine.
    """
    try:
        import pynvml  # noqa: PLC0415 - an optional capability, probed here
    except ImportError:
        return NullGpuBackend("nvidia-ml-py not installed: GPU telemetry off")
    try:
        backend = NvmlGpuBackend(pynvml)
    except Exception as exc:  # noqa: BLE001 - every NVML start failure means "no GPUs"
        return NullGpuBackend(init_failure_reason(pynvml, exc))
    if backend.device_count() < 1:
        backend.close()
        return NullGpuBackend("no NVIDIA GPU: GPU telemetry off")
    return backend


def init_failure_reason(nvml: Any, exc: BaseException) -> str:
    """Why NVML did not start, in one line for the user (the topology reader says it too)."""

    def is_(name: str) -> bool:
        cls = getattr(nvml, name, None)
        return isinstance(cls, type) and isinstance(exc, cls)

    if is_("NVMLError_LibraryNotFound"):
        return "NVML not found (no NVIDIA driver): GPU telemetry off"
    if is_("NVMLError_DriverNotLoaded"):
        return "NVIDIA driver not loaded: GPU telemetry off"
    if is_("NVMLError_NoPermission"):
        return "no permission to use NVML: GPU telemetry off"
    return f"NVML failed to start ({exc}): GPU telemetry off"
