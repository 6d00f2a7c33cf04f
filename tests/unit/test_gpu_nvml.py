"""NvmlGpuBackend against a fake ``pynvml`` module: decoding, and every degradation path."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

import pytest

from tuner.telemetry.gpu import GpuQueryError, NvmlGpuBackend, open_gpu_backend

MIB = 1024 * 1024


class _Obj:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def fake_pynvml(
    *,
    devices: int = 2,
    init_error: str | None = None,
    unsupported: Iterable[str] = (),
    missing: Iterable[str] = (),
    throttle_mask: int = 0x1 | 0x4 | 0x40,
    nvlink_active: int = 0,
    bad_handles: Iterable[int] = (),
) -> types.ModuleType:
    """A stand-in for nvidia-ml-py: the calls NvmlGpuBackend makes, with scripted failures.

    ``unsupported`` names functions that raise NVMLError_NotSupported; ``missing`` names
    functions absent from the module (an older pynvml); ``nvlink_active`` is the number of
    active links (0: the GPU has no NVLink, link 0 says NotSupported).
    """
    mod = types.ModuleType("pynvml")
    unsupported, missing, bad_handles = set(unsupported), set(missing), set(bad_handles)

    class NVMLError(Exception):
        def __init__(self, value: int) -> None:
            super().__init__(f"NVML error {value}")
            self.value = value

    errors = {
        "NVMLError_NotSupported": 3,
        "NVMLError_InvalidArgument": 2,
        "NVMLError_LibraryNotFound": 12,
        "NVMLError_DriverNotLoaded": 9,
        "NVMLError_NoPermission": 4,
        "NVMLError_Unknown": 999,
    }
    mod.NVMLError = NVMLError
    for name, code in errors.items():
        cls = type(name, (NVMLError,), {})
        setattr(mod, name, cls)
        cls.code = code

    mod.NVML_TEMPERATURE_GPU = 0
    mod.NVML_CLOCK_SM = 1
    mod.NVML_CLOCK_MEM = 2
    mod.NVML_PCIE_UTIL_TX_BYTES = 0
    mod.NVML_PCIE_UTIL_RX_BYTES = 1
    mod.NVML_FEATURE_ENABLED = 1
    mod.NVML_NVLINK_MAX_LINKS = 18
    mod.nvmlMemory_v2 = 0x02000028
    mod.calls = []
    mod.shutdowns = 0

    def api(fn: Any) -> Any:
        name = fn.__name__

        def wrapper(*args: Any) -> Any:
            mod.calls.append(name)
            if name in unsupported:
                raise mod.NVMLError_NotSupported(3)
            return fn(*args)

        wrapper.__name__ = name
        if name not in missing:
            setattr(mod, name, wrapper)
        return wrapper

    @api
    def nvmlInit() -> None:
        if init_error is not None:
            raise getattr(mod, init_error)(getattr(mod, init_error).code)

    @api
    def nvmlShutdown() -> None:
        mod.shutdowns += 1

    @api
    def nvmlDeviceGetCount() -> int:
        return devices

    @api
    def nvmlDeviceGetHandleByIndex(i: int) -> str:
        if i in bad_handles:
            raise mod.NVMLError_Unknown(999)
        return f"handle{i}"

    def index_of(handle: Any) -> int:
        if not isinstance(handle, str):
            raise mod.NVMLError_InvalidArgument(2)
        return int(handle.removeprefix("handle"))

    @api
    def nvmlDeviceGetName(h: Any) -> bytes:
        return f"NVIDIA RTX PRO 6000 #{index_of(h)}".encode()  # bytes, as pynvml < 11.5

    @api
    def nvmlDeviceGetUUID(h: Any) -> str:
        return f"GPU-{index_of(h):08d}"

    @api
    def nvmlDeviceGetMemoryInfo(h: Any, version: int | None = None) -> _Obj:
        index_of(h)
        if version is not None:
            if "nvmlDeviceGetMemoryInfo_v2" in unsupported:
                raise mod.NVMLError_NotSupported(3)
            return _Obj(total=96 * 1024 * MIB, used=1000 * MIB, free=0, reserved=500 * MIB)
        return _Obj(total=96 * 1024 * MIB, used=1500 * MIB, free=0)  # v1 counts reserved

    @api
    def nvmlDeviceGetComputeRunningProcesses(h: Any) -> list[_Obj]:
        index_of(h)
        return [_Obj(pid=4242, usedGpuMemory=2048 * MIB), _Obj(pid=4343, usedGpuMemory=None)]

    @api
    def nvmlDeviceGetComputeRunningProcesses_v2(h: Any) -> list[_Obj]:
        index_of(h)
        return [_Obj(pid=5151, usedGpuMemory=MIB)]

    @api
    def nvmlDeviceGetUtilizationRates(h: Any) -> _Obj:
        index_of(h)
        return _Obj(gpu=97, memory=41)

    @api
    def nvmlDeviceGetPowerUsage(h: Any) -> int:
        index_of(h)
        return 287_500  # mW

    @api
    def nvmlDeviceGetTotalEnergyConsumption(h: Any) -> int:
        index_of(h)
        return 123_456_789  # mJ

    @api
    def nvmlDeviceGetTemperature(h: Any, sensor: int) -> int:
        index_of(h)
        return 71

    @api
    def nvmlDeviceGetClockInfo(h: Any, clock: int) -> int:
        index_of(h)
        return {1: 2430, 2: 14001}[clock]

    @api
    def nvmlDeviceGetPcieThroughput(h: Any, counter: int) -> int:
        index_of(h)
        return {0: 1200, 1: 3400}[counter]

    @api
    def nvmlDeviceGetCurrPcieLinkGeneration(h: Any) -> int:
        index_of(h)
        return 1  # trained down at idle

    @api
    def nvmlDeviceGetCurrPcieLinkWidth(h: Any) -> int:
        index_of(h)
        return 16

    @api
    def nvmlDeviceGetMaxPcieLinkGeneration(h: Any) -> int:
        index_of(h)
        return 5

    @api
    def nvmlDeviceGetMaxPcieLinkWidth(h: Any) -> int:
        index_of(h)
        return 16

    @api
    def nvmlDeviceGetMaxClockInfo(h: Any, clock: int) -> int:
        return {mod.NVML_CLOCK_MEM: 3201, mod.NVML_CLOCK_SM: 1980}[clock]  # an H200's

    @api
    def nvmlDeviceGetMemoryBusWidth(h: Any) -> int:
        return 6144

    @api
    def nvmlDeviceGetEnforcedPowerLimit(h: Any) -> int:
        index_of(h)
        return 600_000

    @api
    def nvmlDeviceGetNvLinkState(h: Any, link: int) -> int:
        index_of(h)
        if nvlink_active == 0:
            raise mod.NVMLError_NotSupported(3)
        if link >= 12:
            raise mod.NVMLError_InvalidArgument(2)
        return 1 if link < nvlink_active else 0

    @api
    def nvmlDeviceGetCurrentClocksEventReasons(h: Any) -> int:
        index_of(h)
        return throttle_mask

    @api
    def nvmlDeviceGetCurrentClocksThrottleReasons(h: Any) -> int:
        index_of(h)
        return throttle_mask

    @api
    def nvmlSystemGetDriverVersion() -> str:
        return "580.82.07"

    @api
    def nvmlSystemGetCudaDriverVersion_v2() -> int:
        return 13000

    @api
    def nvmlSystemGetCudaDriverVersion() -> int:
        return 12090

    return mod


def backend_with(**kwargs: Any) -> tuple[NvmlGpuBackend, types.ModuleType]:
    mod = fake_pynvml(**kwargs)
    return NvmlGpuBackend(mod), mod


# -- open_gpu_backend -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("NVMLError_LibraryNotFound", "NVML not found (no NVIDIA driver): GPU telemetry off"),
        ("NVMLError_DriverNotLoaded", "NVIDIA driver not loaded: GPU telemetry off"),
        ("NVMLError_NoPermission", "no permission to use NVML: GPU telemetry off"),
    ],
)
def test_open_falls_back_with_a_clear_line(
    monkeypatch: pytest.MonkeyPatch, error: str, reason: str
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error=error))
    backend = open_gpu_backend()
    assert backend.available is False
    assert backend.device_count() == 0
    assert backend.reason == reason


def test_open_names_an_unexpected_init_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="NVMLError_Unknown"))
    backend = open_gpu_backend()
    assert backend.reason.startswith("NVML failed to start (")
    assert backend.reason.endswith("GPU telemetry off")


def test_open_with_no_devices_shuts_nvml_down(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = fake_pynvml(devices=0)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    backend = open_gpu_backend()
    assert backend.available is False
    assert backend.reason == "no NVIDIA GPU: GPU telemetry off"
    assert mod.shutdowns == 1


def test_open_returns_nvml_when_it_sees_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(devices=8))
    backend = open_gpu_backend()
    assert isinstance(backend, NvmlGpuBackend)
    assert backend.available is True
    assert backend.reason is None
    assert backend.device_count() == 8
    backend.close()


def test_count_failure_after_init_still_shuts_down() -> None:
    mod = fake_pynvml(unsupported=["nvmlDeviceGetCount"])
    with pytest.raises(mod.NVMLError):
        NvmlGpuBackend(mod)
    assert mod.shutdowns == 1


# -- readings ---------------------------------------------------------------------------------


def test_sample_converts_units_and_decodes_throttling() -> None:
    backend, _ = backend_with()
    s = backend.sample(1)
    assert s.index == 1
    assert s.util_pct == 97.0
    assert s.mem_util_pct == 41.0
    assert s.memory_used_mib == 1000.0  # v2: without the driver's reservation
    assert s.power_w == 287.5
    assert s.energy_mj == 123_456_789.0
    assert s.temperature_c == 71.0
    assert s.sm_clock_mhz == 2430.0
    assert s.mem_clock_mhz == 14001.0
    assert s.pcie_tx_kbps == 1200.0
    assert s.pcie_rx_kbps == 3400.0
    assert s.throttle_reasons == ("sw_power_cap", "hw_thermal")  # gpu_idle dropped


def test_each_unsupported_field_is_none_and_the_rest_arrives() -> None:
    backend, _ = backend_with(
        unsupported=[
            "nvmlDeviceGetTotalEnergyConsumption",
            "nvmlDeviceGetPcieThroughput",
            "nvmlDeviceGetPowerUsage",
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons",
        ]
    )
    s = backend.sample(0)
    assert s.energy_mj is None
    assert s.power_w is None
    assert s.pcie_tx_kbps is None and s.pcie_rx_kbps is None
    assert s.throttle_reasons == ()
    assert s.util_pct == 97.0
    assert s.temperature_c == 71.0
    assert s.memory_used_mib == 1000.0


def test_everything_unsupported_still_gives_a_sample() -> None:
    mod = fake_pynvml()
    keep = {"nvmlDeviceGetHandleByIndex", "nvmlDeviceGetCount"}
    every = [n for n in dir(mod) if n.startswith("nvmlDevice") and n not in keep]
    backend = NvmlGpuBackend(fake_pynvml(unsupported=every))
    s = backend.sample(0)
    assert s.util_pct is None and s.memory_used_mib is None and s.sm_clock_mhz is None
    info = backend.info(0)
    assert info.name == "unknown"
    assert info.memory_total_mib == 0.0
    assert info.pcie_gen is None and info.pcie_gen_max is None
    assert info.nvlink_links == 0
    assert info.power_limit_w is None


def test_memory_falls_back_to_v1_where_v2_is_missing() -> None:
    backend, _ = backend_with(unsupported=["nvmlDeviceGetMemoryInfo_v2"])
    assert backend.memory_used_mib(0) == 1500.0


def test_memory_falls_back_to_v1_with_an_old_pynvml() -> None:
    mod = fake_pynvml()
    del mod.nvmlMemory_v2
    assert NvmlGpuBackend(mod).memory_used_mib(0) == 1500.0


def test_memory_that_cannot_be_read_raises_rather_than_reads_as_free() -> None:
    backend, _ = backend_with(unsupported=["nvmlDeviceGetMemoryInfo"])
    with pytest.raises(GpuQueryError, match="GPU 0"):
        backend.memory_used_mib(0)


def test_older_pynvml_uses_the_throttle_reasons_call() -> None:
    backend, mod = backend_with(missing=["nvmlDeviceGetCurrentClocksEventReasons"])
    assert backend.sample(0).throttle_reasons == ("sw_power_cap", "hw_thermal")
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in mod.calls


def test_info_reads_pcie_and_decodes_a_bytes_name() -> None:
    backend, _ = backend_with()
    info = backend.info(1)
    assert info.name == "NVIDIA RTX PRO 6000 #1"
    assert info.uuid == "GPU-00000001"
    assert info.memory_total_mib == 96 * 1024
    assert (info.pcie_gen, info.pcie_width) == (1, 16)
    assert (info.pcie_gen_max, info.pcie_width_max) == (5, 16)
    assert info.power_limit_w == 600.0


def test_pcie_only_gpu_has_no_nvlink_and_asks_once() -> None:
    backend, mod = backend_with(nvlink_active=0)
    assert backend.info(0).nvlink_links == 0
    assert mod.calls.count("nvmlDeviceGetNvLinkState") == 1  # NotSupported on link 0 ends it


def test_nvlink_counts_active_links() -> None:
    backend, _ = backend_with(nvlink_active=4)
    assert backend.info(0).nvlink_links == 4


def test_compute_processes_with_unknown_memory() -> None:
    backend, _ = backend_with()
    procs = backend.compute_processes(0)
    assert [p.pid for p in procs] == [4242, 4343]
    assert procs[0].used_memory_mib == 2048.0
    assert procs[1].used_memory_mib is None


def test_compute_processes_fall_back_to_v2_then_to_empty() -> None:
    backend, _ = backend_with(unsupported=["nvmlDeviceGetComputeRunningProcesses"])
    assert [p.pid for p in backend.compute_processes(0)] == [5151]
    backend, _ = backend_with(
        unsupported=[
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetComputeRunningProcesses_v2",
        ]
    )
    assert backend.compute_processes(0) == []


def test_versions() -> None:
    backend, _ = backend_with()
    assert backend.driver_version() == "580.82.07"
    assert backend.cuda_driver_version() == "13.0"
    backend, _ = backend_with(missing=["nvmlSystemGetCudaDriverVersion_v2"])
    assert backend.cuda_driver_version() == "12.9"
    backend, _ = backend_with(
        unsupported=["nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion_v2"],
        missing=["nvmlSystemGetCudaDriverVersion"],
    )
    assert backend.driver_version() is None
    assert backend.cuda_driver_version() is None


def test_a_lost_gpu_reads_as_nones_and_the_others_still_work() -> None:
    backend, _ = backend_with(devices=3, bad_handles=[1])
    assert backend.device_count() == 3
    lost = backend.sample(1)
    assert lost.util_pct is None and lost.power_w is None
    assert backend.info(1).name == "unknown"
    assert backend.sample(2).util_pct == 97.0


def test_index_out_of_range() -> None:
    backend, _ = backend_with(devices=2)
    with pytest.raises(IndexError):
        backend.sample(2)


def test_close_is_idempotent() -> None:
    backend, mod = backend_with()
    backend.close()
    backend.close()
    assert mod.shutdowns == 1


def test_info_gives_the_theoretical_memory_bandwidth_or_none() -> None:
    backend, _ = backend_with()
    # H200: 3201 MHz x 6144 bits x 2 (double data rate) = 4917 GB/s (its sheet: 4.8 TB/s).
    assert backend.info(0).memory_bandwidth_gbps == pytest.approx(4917.2, rel=1e-4)
    older, _ = backend_with(missing=["nvmlDeviceGetMemoryBusWidth"])
    assert older.info(0).memory_bandwidth_gbps is None
    unsupported, _ = backend_with(unsupported=["nvmlDeviceGetMaxClockInfo"])
    assert unsupported.info(0).memory_bandwidth_gbps is None
