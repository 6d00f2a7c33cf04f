"""NVML behind the GPU seam: ``NvmlGpuBackend``, every call guarded on its own.

A GPU that cannot report a field (a consumer card without an energy counter, a PCIe card
asked about NVLink, a driver too old for a newer entry point) yields ``None`` for that
field and the rest still arrives. Only the two hygiene questions the launcher relies on
differ, and their docstrings say how. NVML's bit masks and version integers are decoded
here too (``decode_throttle_reasons``, ``format_cuda_version``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tuner.telemetry.gpu_types import GpuInfo, GpuProcess, GpuQueryError, GpuSample

log = logging.getLogger(__name__)

T = TypeVar("T")

_MIB = 1024.0 * 1024.0


# NVML clock event ("throttle") reason bits, named the way the docs and summaries print them.
# The values are NVML's ABI, so they are spelled out rather than read from pynvml, whose
# constant names changed (ClocksThrottleReason* -> ClocksEventReason*) between releases.
THROTTLE_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "power_brake",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}

# Reasons that are a configured state, not the GPU slowing itself down under load: an idle
# GPU lowers its clocks, and clocks pinned by an administrator are a setting, not an event.
NON_THROTTLING_REASONS = frozenset(
    {"gpu_idle", "applications_clocks_setting", "display_clock_setting"}
)


def decode_throttle_reasons(mask: int) -> tuple[str, ...]:
    """The throttling reasons set in an NVML clock-event bitmask, in bit order.

    Unknown bits come back as ``unknown_0x...`` so a new driver's reason is seen, not lost.
    """
    names: list[str] = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            name = THROTTLE_REASON_BITS.get(bit, f"unknown_{bit:#x}")
            if name not in NON_THROTTLING_REASONS:
                names.append(name)
        bit <<= 1
    return tuple(names)


def format_cuda_version(value: int) -> str:
    """NVML's CUDA driver version integer (12090) as "12.9"."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _text(value: Any) -> str:
    """pynvml returned bytes before 11.5; str since."""
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlGpuBackend:
    """The real GPUs through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``).

    Construct with ``NvmlGpuBackend()``; it raises what ``nvmlInit`` raises, which is why
    callers go through ``open_gpu_backend()``. Device handles are taken once, at start.
    """

    available = True
    reason: str | None = None

    def __init__(self, nvml: Any = None) -> None:
        if nvml is None:
            import pynvml  # noqa: PLC0415 - optional at runtime, see open_gpu_backend

            nvml = pynvml
        self._nvml: Any = nvml
        nvml.nvmlInit()
        self._closed = False
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception:
            self._shutdown()
            raise
        self._handles: list[Any | None] = [
            self._call(nvml.nvmlDeviceGetHandleByIndex, i) for i in range(count)
        ]
        self._warned: set[str] = set()

    # -- guarded calls ------------------------------------------------------------------

    def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """One NVML call; None when it fails for any reason.

        Any exception, not only NVMLError: a pynvml too old for an entry point raises
        AttributeError, and a telemetry reading is never worth crashing a sweep over.
        """
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - see docstring
            log.debug("NVML %s failed: %r", getattr(fn, "__name__", fn), exc)
            return None

    def _fn(self, name: str) -> Callable[..., Any] | None:
        return getattr(self._nvml, name, None)

    def _get(self, name: str, *args: Any) -> Any | None:
        fn = self._fn(name)
        return None if fn is None else self._call(fn, *args)

    def _handle(self, index: int) -> Any | None:
        if index < 0 or index >= len(self._handles):
            raise IndexError(f"no GPU {index}: this machine has {len(self._handles)}")
        return self._handles[index]

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    # -- the protocol -------------------------------------------------------------------

    def device_count(self) -> int:
        return len(self._handles)

    def info(self, index: int) -> GpuInfo:
        h = self._handle(index)
        name = self._get("nvmlDeviceGetName", h)
        uuid = self._get("nvmlDeviceGetUUID", h)
        mem = self._get("nvmlDeviceGetMemoryInfo", h)
        limit_mw = self._get("nvmlDeviceGetEnforcedPowerLimit", h)
        return GpuInfo(
            index=index,
            name=_text(name) if name is not None else "unknown",
            uuid=_text(uuid) if uuid is not None else "",
            memory_total_mib=float(mem.total) / _MIB if mem is not None else 0.0,
            pcie_gen=self._int("nvmlDeviceGetCurrPcieLinkGeneration", h),
            pcie_width=self._int("nvmlDeviceGetCurrPcieLinkWidth", h),
            pcie_gen_max=self._int("nvmlDeviceGetMaxPcieLinkGeneration", h),
            pcie_width_max=self._int("nvmlDeviceGetMaxPcieLinkWidth", h),
            nvlink_links=self._nvlink_links(h),
            power_limit_w=float(limit_mw) / 1000.0 if limit_mw is not None else None,
            memory_bandwidth_gbps=self._memory_bandwidth_gbps(h),
        )

    def _memory_bandwidth_gbps(self, h: Any) -> float | None:
        """The spec-sheet figure from NVML: NVML gives the memory clock at half the data
        rate (HBM3 on an H100: 2619 MHz x 5120 bits x 2 = 3.35 TB/s; GDDR6X on an RTX 4090:
        10501 MHz x 384 bits x 2 = 1008 GB/s), so double data rate it is."""
        clock = getattr(self._nvml, "NVML_CLOCK_MEM", 2)
        mhz = self._int("nvmlDeviceGetMaxClockInfo", h, clock)
        bits = self._int("nvmlDeviceGetMemoryBusWidth", h)
        if not mhz or not bits:
            return None
        return mhz * 1e6 * bits / 8 * 2 / 1e9

    def memory_used_mib(self, index: int) -> float:
        """Used memory of one GPU, in MiB.

        Raises ``GpuQueryError`` when NVML cannot say: the launcher's "are the GPUs free"
        check must not read a failure as "nothing in use".
        """
        used = self._memory_used(self._handle(index))
        if used is None:
            raise GpuQueryError(f"GPU {index}: NVML cannot report used memory")
        return used

    def compute_processes(self, index: int) -> list[GpuProcess]:
        """Processes with a compute context on one GPU; ``[]`` when NVML cannot list them.

        Listing is unsupported on some virtualised GPUs and pids are host pids inside
        containers, so callers should also check ``memory_used_mib`` before calling a GPU
        free. A failure to list is logged once per GPU.
        """
        h = self._handle(index)
        for name in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetComputeRunningProcesses_v2",
        ):
            procs = self._get(name, h)
            if procs is not None:
                return [
                    GpuProcess(
                        pid=int(p.pid),
                        used_memory_mib=(
                            float(p.usedGpuMemory) / _MIB
                            if getattr(p, "usedGpuMemory", None) is not None
                            else None
                        ),
                    )
                    for p in procs
                ]
        self._warn_once(
            f"procs{index}", f"GPU {index}: NVML cannot list compute processes; use memory"
        )
        return []

    def sample(self, index: int) -> GpuSample:
        h = self._handle(index)
        nvml = self._nvml
        util = self._get("nvmlDeviceGetUtilizationRates", h)
        # The time of the energy reading: energy deltas are divided by these times. (The
        # PCIe counters below block ~20 ms each, so the end of the call would be late.)
        now = time.time()
        power_mw = self._get("nvmlDeviceGetPowerUsage", h)
        energy_mj = self._get("nvmlDeviceGetTotalEnergyConsumption", h)
        temp = self._get("nvmlDeviceGetTemperature", h, getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
        sm = self._get("nvmlDeviceGetClockInfo", h, getattr(nvml, "NVML_CLOCK_SM", 1))
        mem_clock = self._get("nvmlDeviceGetClockInfo", h, getattr(nvml, "NVML_CLOCK_MEM", 2))
        pcie = "nvmlDeviceGetPcieThroughput"
        tx = self._get(pcie, h, getattr(nvml, "NVML_PCIE_UTIL_TX_BYTES", 0))
        rx = self._get(pcie, h, getattr(nvml, "NVML_PCIE_UTIL_RX_BYTES", 1))
        return GpuSample(
            index=index,
            time_s=now,
            util_pct=_float(getattr(util, "gpu", None)),
            mem_util_pct=_float(getattr(util, "memory", None)),
            memory_used_mib=self._memory_used(h),
            power_w=float(power_mw) / 1000.0 if power_mw is not None else None,
            energy_mj=_float(energy_mj),
            temperature_c=_float(temp),
            sm_clock_mhz=_float(sm),
            mem_clock_mhz=_float(mem_clock),
            pcie_tx_kbps=_float(tx),
            pcie_rx_kbps=_float(rx),
            throttle_reasons=self._throttle_reasons(h),
        )

    def driver_version(self) -> str | None:
        version = self._get("nvmlSystemGetDriverVersion")
        return _text(version) if version is not None else None

    def cuda_driver_version(self) -> str | None:
        for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
            value = self._get(name)
            if value is not None:
                return format_cuda_version(int(value))
        return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._shutdown()

    # -- helpers --------------------------------------------------------------------------

    def _shutdown(self) -> None:
        self._call(self._nvml.nvmlShutdown)

    def _int(self, name: str, *args: Any) -> int | None:
        value = self._get(name, *args)
        return int(value) if value is not None else None

    def _memory_used(self, h: Any) -> float | None:
        # v2 reports "used" without the driver's reserved memory, so an idle GPU reads near
        # zero; v1 counts the reservation as used. Prefer v2, fall back where it is missing.
        version = getattr(self._nvml, "nvmlMemory_v2", None)
        mem = None
        if version is not None:
            mem = self._get("nvmlDeviceGetMemoryInfo", h, version)
        if mem is None:
            mem = self._get("nvmlDeviceGetMemoryInfo", h)
        return float(mem.used) / _MIB if mem is not None else None

    def _throttle_reasons(self, h: Any) -> tuple[str, ...]:
        for name in (
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons",
        ):
            mask = self._get(name, h)
            if mask is not None:
                return decode_throttle_reasons(int(mask))
        return ()

    def _nvlink_links(self, h: Any) -> int:
        fn = self._fn("nvmlDeviceGetNvLinkState")
        if fn is None or h is None:
            return 0
        not_supported = getattr(self._nvml, "NVMLError_NotSupported", ())
        enabled = getattr(self._nvml, "NVML_FEATURE_ENABLED", 1)
        active = 0
        for link in range(int(getattr(self._nvml, "NVML_NVLINK_MAX_LINKS", 18))):
            try:
                if fn(h, link) == enabled:
                    active += 1
            except not_supported:
                # A GPU without NVLink says so on link 0; later links of an NVLink GPU
                # past its count say so too. Either way there is nothing further.
                break
            except Exception:  # noqa: BLE001 - an odd link (invalid, disabled) is just inactive
                continue
        return active


def _float(value: Any) -> float | None:
    return float(value) if value is not None else None
