"""What the GPU seam speaks: the ``GpuBackend`` protocol and the facts it answers with.

Its own module, with no NVML in it, so the backends (NVML's, the null one, the tests'
fake) and everything that reads their answers share the types without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class GpuQueryError(RuntimeError):
    """A GPU could not answer a question the caller cannot do without (its used memory)."""


@dataclass(frozen=True)
class GpuProcess:
    """A process holding a GPU context, as NVML reports it.

    NVML reports pids in the host's PID namespace: inside a container without
    ``--pid=host`` they do not match ``os.getpid()`` or psutil's view.
    """

    pid: int
    used_memory_mib: float | None  # None when the driver does not say (e.g. in containers)


@dataclass(frozen=True)
class GpuInfo:
    """Static facts of one GPU, for the study inventory.

    ``pcie_gen``/``pcie_width`` are the link's state when read: an idle GPU
    often trains its link down to save power, so the ``_max`` values are the
    capability to compare between machines.
    """

    index: int
    name: str
    uuid: str
    memory_total_mib: float
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    nvlink_links: int = 0  # active NVLink links; 0 on PCIe-only GPUs
    power_limit_w: float | None = None  # the enforced board power limit
    memory_bandwidth_gbps: float | None = None
    """Theoretical peak GB/s: max memory clock x bus width x 2 (double data rate)."""


@dataclass(frozen=True)
class GpuSample:
    """One reading of one GPU; a field is None when the GPU cannot report it."""

    index: int
    time_s: float  # time.time()
    util_pct: float | None = None
    mem_util_pct: float | None = None
    memory_used_mib: float | None = None
    power_w: float | None = None
    energy_mj: float | None = None  # total energy counter since driver load, millijoules
    temperature_c: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    pcie_tx_kbps: float | None = None  # KB/s, NVML's unit, counted over a ~20 ms window
    pcie_rx_kbps: float | None = None
    throttle_reasons: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class GpuBackend(Protocol):
    """What tuner needs from the GPUs; indices are NVML indices (not CUDA_VISIBLE_DEVICES')."""

    @property
    def available(self) -> bool: ...

    def device_count(self) -> int: ...

    def info(self, index: int) -> GpuInfo: ...

    def memory_used_mib(self, index: int) -> float: ...

    def compute_processes(self, index: int) -> list[GpuProcess]: ...

    def sample(self, index: int) -> GpuSample: ...

    def driver_version(self) -> str | None: ...

    def cuda_driver_version(self) -> str | None: ...

    def close(self) -> None: ...
