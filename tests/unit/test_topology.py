"""The topology reader: real `nvidia-smi topo -m` outputs, a fake NVML, and every degradation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeTopologyNvml
from tuner.errors import ConfigError
from tuner.telemetry.topology import (
    PairLink,
    Topology,
    TopologyRead,
    load_topology_file,
    parse_topo_matrix,
    read_topology,
)

FIXTURES = Path(__file__).parent / "fixtures" / "topology"


def sample(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_an_nvswitch_box_reads_as_fully_nvlinked() -> None:
    topo = Topology.from_smi(sample("dgx-h100-nv18.txt"))
    assert topo.gpus == 8 and len(topo.pairs) == 28
    assert {p.smi for p in topo.pairs} == {"NV18"}
    assert topo.fully_nvlinked(range(8))
    assert topo.summary() == "8 GPUs, fully NVLinked (NV18)"


def test_a_pcie_box_has_no_nvlink_and_names_its_levels() -> None:
    topo = Topology.from_smi(sample("pcie-5gpu-rtx4090.txt"))
    assert topo.gpus == 5 and len(topo.pairs) == 10
    assert topo.pair(1, 2) == PairLink(1, 2, smi="PHB")
    assert topo.pair(4, 0) == PairLink(0, 4, smi="SYS")  # either order
    assert not topo.fully_nvlinked([1, 2, 3, 4])
    assert len(topo.unlinked([1, 2, 3, 4])) == 6
    assert topo.summary() == "5 GPUs, PCIe only (NODE/SYS/PHB between pairs), no NVLink"


def test_tab_separated_output_and_its_gpu_numa_column() -> None:
    cells = parse_topo_matrix(sample("pcie-2gpu-rtx5090-tabs.txt"))
    assert cells == {(0, 1): "PHB"}


def test_nic_columns_are_left_out_and_a_cut_matrix_leaves_pairs_unknown() -> None:
    topo = Topology.from_smi(sample("pcie-8gpu-excerpt.txt"))
    assert topo.gpus == 8
    assert topo.pair(0, 1) == PairLink(0, 1, smi="PIX")
    assert topo.pair(4, 5) == PairLink(4, 5, smi="PIX")
    assert topo.pair(5, 6) is None  # GPU5's row was cut off in the source
    assert not topo.fully_nvlinked(range(8))  # unknown counts as "no", as vLLM counts it
    assert topo.unlinked([5, 6, 7]) == []  # nothing known among those three
    assert topo.summary() == "8 GPUs, no NVLink between the 25 pairs read (SYS/PHB/PIX), 3 unknown"


def test_vllm_collect_env_prints_the_header_flush_left() -> None:
    text = "GPU Topology:\nGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-15\nGPU1\tNV4\t X \t0-15\n"
    assert parse_topo_matrix(text) == {(0, 1): "NV4"}


def test_nvml_pairs_links_and_pcie_levels() -> None:
    nvml = FakeTopologyNvml(4, nvlink={(0, 1), (2, 3)}, pcie={(0, 1): 10, (2, 3): 20})
    read = read_topology(nvml, run_smi=None)
    topo = read.topology
    assert topo is not None and topo.source == "nvml"
    ok = {"p2p_read": True, "p2p_write": True}
    assert topo.pair(0, 1) == PairLink(0, 1, pcie="PIX", nvlink=True, **ok)
    assert topo.pair(1, 2) == PairLink(1, 2, pcie="SYS", nvlink=False, **ok)
    assert topo.nvlink_links == (18, 18, 18, 18)
    assert topo.fully_nvlinked([0, 1]) and not topo.fully_nvlinked([0, 1, 2])
    assert topo.summary() == "4 GPUs, NVLink between 2 of 6 pairs, PCIe (SYS) between the others"
    assert nvml.shutdowns == 1


def test_nvidia_smi_adds_its_bond_names_to_nvml_answers() -> None:
    nvml = FakeTopologyNvml(8, nvlink={(a, b) for a in range(8) for b in range(a + 1, 8)})
    read = read_topology(nvml, run_smi=lambda: sample("dgx-h100-nv18.txt"))
    assert read.topology is not None and read.topology.source == "nvml+nvidia-smi"
    assert read.topology.pair(3, 7) == PairLink(
        3, 7, pcie="SYS", smi="NV18", nvlink=True, p2p_read=True, p2p_write=True
    )
    assert read.notes == ()


def test_without_nvidia_smi_nvml_alone_is_said() -> None:
    read = read_topology(FakeTopologyNvml(2), run_smi=lambda: None)
    assert read.topology is not None and read.topology.source == "nvml"
    assert read.notes == ("nvidia-smi topo -m not available: NVML's answers alone",)


def test_p2p_that_nvml_says_does_not_work_is_recorded() -> None:
    topo = read_topology(FakeTopologyNvml(2, p2p_blocked={(0, 1)}), run_smi=None).topology
    assert topo is not None
    assert [(p.a, p.b) for p in topo.p2p_unsupported([0, 1])] == [(0, 1)]


def test_an_older_pynvml_without_p2p_leaves_the_pairs_unknown() -> None:
    nvml = FakeTopologyNvml(2, missing={"nvmlDeviceGetP2PStatus"})
    topo = read_topology(nvml, run_smi=None).topology
    assert topo is not None
    assert topo.pair(0, 1) == PairLink(0, 1, pcie="SYS")
    assert topo.unlinked([0, 1]) == [] and not topo.fully_nvlinked([0, 1])
    assert topo.summary() == "2 GPUs, NVLink unknown (PCIe: SYS)"


def test_no_driver_is_none_with_the_reason() -> None:
    nvml = FakeTopologyNvml(0, init_error=FakeTopologyNvml.NVMLError_LibraryNotFound())
    read = read_topology(nvml, run_smi=None)
    assert read.topology is None
    assert read.reason == "NVML not found (no NVIDIA driver)"
    assert read.describe() == "topology unknown: NVML not found (no NVIDIA driver)"


def test_no_gpu_is_none_and_nvidia_smi_is_not_asked() -> None:
    asked: list[int] = []
    read = read_topology(FakeTopologyNvml(0), run_smi=lambda: asked.append(1) or None)
    assert read.topology is None and read.reason == "no NVIDIA GPU"
    assert asked == []


def test_one_gpu_has_no_pairs() -> None:
    topo = read_topology(FakeTopologyNvml(1), run_smi=None).topology
    assert topo is not None and topo.pairs == ()
    assert topo.summary() == "1 GPU: no pairs"


def test_json_round_trip_keeps_every_answer() -> None:
    nvml = FakeTopologyNvml(3, nvlink={(0, 1)}, p2p_blocked={(1, 2)}, pcie={(0, 2): 40})
    read = read_topology(nvml, run_smi=None)
    again = TopologyRead.from_json(read.to_json())
    assert again == read
    gone = TopologyRead(None, "no NVIDIA GPU")
    assert TopologyRead.from_json(gone.to_json()) == gone
    assert TopologyRead.from_json(None) is None


def test_a_file_of_either_kind_is_read(tmp_path: Path) -> None:
    smi = load_topology_file(FIXTURES / "pcie-5gpu-rtx4090.txt")
    assert smi.gpus == 5 and smi.source.startswith("file ")
    as_json = tmp_path / "t.json"
    as_json.write_text(__import__("json").dumps(smi.to_json()))
    assert load_topology_file(as_json).pairs == smi.pairs


def test_a_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"topology: cannot read .*nope\.txt.*nvidia-smi topo -m"):
        load_topology_file(tmp_path / "nope.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("no matrix here\n")
    with pytest.raises(ConfigError, match=r"empty\.txt holds no GPU matrix"):
        load_topology_file(empty)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match=r"broken\.json is not a topology JSON"):
        load_topology_file(broken)
