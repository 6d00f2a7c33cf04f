"""tuner.telemetry.fingerprint: alike hosts share a digest; what differs is named."""

from __future__ import annotations

import dataclasses

from tuner.telemetry.fingerprint import Fingerprint, fingerprint_of
from tuner.telemetry.gpu import GpuInfo, NullGpuBackend
from tuner.telemetry.inventory import Inventory, collect_inventory


def _h200(index: int, nvlink: int = 18) -> GpuInfo:
    return GpuInfo(
        index=index,
        name="NVIDIA H200",
        uuid=f"GPU-{index}",
        memory_total_mib=143771,
        pcie_gen=5,
        pcie_width=16,
        pcie_gen_max=5,
        pcie_width_max=16,
        nvlink_links=nvlink,
        power_limit_w=700.0,
    )


def _box(hostname: str, gpus: tuple[GpuInfo, ...], driver: str = "570.86.15") -> Inventory:
    base = collect_inventory(NullGpuBackend())
    return dataclasses.replace(
        base,
        hostname=hostname,
        gpus=gpus,
        gpu_count=len(gpus),
        driver_version=driver,
        cuda_driver_version="12.8",
        nvlink=any(g.nvlink_links for g in gpus),
        nccl_version="2.26.2",
        server_version="0.11.0",
    )


def test_identical_boxes_share_a_fingerprint_whatever_their_names() -> None:
    eight = tuple(_h200(i) for i in range(8))
    a, b = fingerprint_of(_box("gpu-a", eight)), fingerprint_of(_box("gpu-b", eight))
    assert a.digest == b.digest and len(a.digest) == 12
    assert a.describe() == "8 x NVIDIA H200, driver 570.86.15, NVLink, NCCL 2.26.2, vLLM 0.11.0"


def test_gpu_count_driver_and_interconnect_each_change_the_fingerprint() -> None:
    eight = tuple(_h200(i) for i in range(8))
    base = fingerprint_of(_box("a", eight))
    four = fingerprint_of(_box("a", eight[:4]))
    driver = fingerprint_of(_box("a", eight, driver="550.54.15"))
    pcie = fingerprint_of(_box("a", tuple(_h200(i, nvlink=0) for i in range(8))))
    assert len({base.digest, four.digest, driver.digest, pcie.digest}) == 4
    assert base.differences(driver) == ["driver: '570.86.15' != '550.54.15'"]
    assert base.differences(pcie) == ["interconnect: 'nvlink' != 'pcie'"]


def test_without_a_gpu_the_cpu_stands_in() -> None:
    fp = fingerprint_of(collect_inventory(NullGpuBackend()))
    assert fp.facts["gpu_count"] == 0
    assert "cpu_model" in fp.facts and fp.facts["cpu_count"]
    assert fp.describe().startswith("no GPU, ")
    assert Fingerprint(facts=dict(fp.facts)).digest == fp.digest  # as stored and read back
