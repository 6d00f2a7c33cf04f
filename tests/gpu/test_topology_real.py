"""The topology read from a real NVML; skipped where NVML or a GPU is missing.

One GPU has no pairs: P2P and NVLink between GPUs cannot be seen on it (docs/topology.md).
"""

from __future__ import annotations

import shutil

import pytest

from tuner.check.custom_allreduce import off_reason
from tuner.telemetry.gpu import NvmlGpuBackend, open_gpu_backend
from tuner.telemetry.topology import PCIE_LEVELS, TopologyRead, parse_topo_matrix, read_topology

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(60)]


def test_the_topology_of_this_host_has_the_shape_nvml_gives() -> None:
    backend = open_gpu_backend()
    if not backend.available:
        pytest.skip(backend.reason)
    assert isinstance(backend, NvmlGpuBackend)
    count = backend.device_count()
    links = [backend.info(i).nvlink_links for i in range(count)]
    backend.close()

    read = read_topology()
    topo = read.topology
    assert topo is not None, read.reason
    assert topo.gpus == count
    assert len(topo.pairs) == count * (count - 1) // 2
    assert list(topo.nvlink_links) == links  # the inventory's count, read the same way
    for pair in topo.pairs:
        assert 0 <= pair.a < pair.b < count
        assert pair.pcie is None or pair.pcie in PCIE_LEVELS.values()
        assert pair.nvlink in (True, False)  # a driver answers P2P over NVLink on any GPU
        assert pair.p2p_read in (True, False)
    if count == 1:
        assert topo.pairs == () and topo.summary() == "1 GPU: no pairs"
        assert read.notes == ()  # nvidia-smi is not asked: there is no pair to read
    elif shutil.which("nvidia-smi"):
        assert topo.source == "nvml+nvidia-smi", read.notes
        assert all(p.smi is not None for p in topo.pairs)
    assert TopologyRead.from_json(read.to_json()) == TopologyRead(topo)
    # TP=1 ignores the flag whatever the GPUs; TP=count on a fully NVLinked host keeps it
    assert off_reason(topo, ["vllm", "serve", "m"], {}) is not None
    if count in (2, 4, 6, 8) and topo.fully_nvlinked(range(count)):
        assert off_reason(topo, ["vllm", "serve", "m", "-tp", str(count)], {}) is None


def test_nvidia_smi_topo_m_parses_here() -> None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        pytest.skip("nvidia-smi not on PATH")
    from tuner.telemetry.topology import run_nvidia_smi

    text = run_nvidia_smi()
    assert text is not None and "GPU0" in text
    cells = parse_topo_matrix(text)
    gpus = text.count("\nGPU")  # one row per GPU (NIC rows start "NIC")
    assert len(cells) == gpus * (gpus - 1) // 2
