"""vLLM's custom all-reduce rule (where --disable-custom-all-reduce changes nothing), the check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes import FakeTopologyNvml
from tests.unit.check.helpers import FakeHelp, messages, space_file
from tuner.check import check_space
from tuner.check.custom_allreduce import ignored_params, off_reason, refusal
from tuner.space.spec import SpaceSpec, load_space
from tuner.telemetry.topology import PairLink, Topology, TopologyRead, read_topology

FIXTURES = Path(__file__).parents[1] / "fixtures" / "topology"
PCIE_8 = Topology(8, tuple(PairLink(a, b, smi="SYS") for a in range(8) for b in range(a + 1, 8)))


def nvml_topology(gpus: int, **kw: Any) -> Topology:
    topo = read_topology(FakeTopologyNvml(gpus, **kw), run_smi=None).topology
    assert topo is not None
    return topo


def full_mesh(gpus: int) -> set[tuple[int, int]]:
    return {(a, b) for a in range(gpus) for b in range(a + 1, gpus)}


def argv(*extra: str) -> list[str]:
    return ["vllm", "serve", "m", *extra]


def test_tp8_over_pcie_is_off_and_names_a_pair() -> None:
    reason = off_reason(PCIE_8, argv("--tensor-parallel-size", "8"), {})
    assert reason is not None
    assert reason.startswith("TP=8 on GPUs 0-7 with no NVLink between GPU 0 and GPU 1")
    assert "only on 2 GPUs or on GPUs all joined by NVLink" in reason


def test_tp8_fully_nvlinked_keeps_the_flag() -> None:
    nvlinked = Topology.from_smi((FIXTURES / "dgx-h100-nv18.txt").read_text())
    assert off_reason(nvlinked, argv("-tp", "8"), {}) is None
    assert off_reason(nvml_topology(8, nvlink=full_mesh(8)), argv("-tp=8"), {}) is None


def test_tp2_over_pcie_keeps_the_flag_unless_p2p_is_unsupported() -> None:
    assert off_reason(nvml_topology(2), argv("-tp", "2"), {}) is None
    blocked = off_reason(nvml_topology(2, p2p_blocked={(0, 1)}), argv("-tp", "2"), {})
    assert blocked is not None and "P2P does not work between GPU 0 and GPU 1" in blocked


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ((), "TP=1: vLLM builds no custom all-reduce for one GPU"),
        (("--tensor_parallel_size", "3"), "TP=3: vLLM's custom all-reduce supports TP 2, 4, 6, 8"),
        (("-tp", "16"), "TP=16: vLLM's custom all-reduce supports TP 2, 4, 6, 8"),
    ],
)
def test_sizes_vllm_never_builds_it_for_need_no_topology(
    extra: tuple[str, ...], expected: str
) -> None:
    reason = off_reason(None, argv(*extra), {})
    assert reason is not None and reason.startswith(expected)


def test_unknown_is_never_skipped() -> None:
    assert off_reason(None, argv("-tp", "8"), {}) is None  # no topology
    assert off_reason(PCIE_8, argv("--config", "c.yaml"), {}) is None  # TP may be in the file
    assert off_reason(PCIE_8, argv("-tp", "8"), {"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"}) is None
    assert off_reason(PCIE_8, argv("-tp", "8", "-pp", "2"), {}) is None  # 16 GPUs: not here
    cut = Topology.from_smi((FIXTURES / "pcie-8gpu-excerpt.txt").read_text())
    assert off_reason(cut, argv("-tp", "4"), {"CUDA_VISIBLE_DEVICES": "5,6,7,4"}) is not None
    unknown = nvml_topology(4, missing={"nvmlDeviceGetP2PStatus"})
    assert off_reason(unknown, argv("-tp", "4"), {}) is None  # NVML could not say


def test_the_servers_gpus_and_every_tp_group_count() -> None:
    pairs = nvml_topology(4, nvlink={(0, 1), (2, 3)})  # two NVLinked pairs over PCIe
    assert off_reason(pairs, argv("-tp", "4"), {}) is not None
    mesh = nvml_topology(8, nvlink=full_mesh(4))  # GPUs 0-3 NVLinked, 4-7 over PCIe
    assert off_reason(mesh, argv("-tp", "4"), {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}) is None
    assert off_reason(mesh, argv("-tp", "4"), {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}) is not None
    # PP=2: one TP group on the NVLinked GPUs, so the flag changes that group
    assert off_reason(mesh, argv("-tp", "4", "-pp", "2"), {}) is None


def spec_with(tmp_path: Path, command: list[str], **params: object) -> SpaceSpec:
    command = [*command, "--port", "{port}"]
    return load_space(space_file(tmp_path, command=command, params=params)).spec


CAR = {"args": ["--disable-custom-all-reduce"], "choices": ["default", True]}


def test_ignored_params_and_the_refusal_of_one_configuration(tmp_path: Path) -> None:
    seqs = {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 8]}
    spec = spec_with(tmp_path, argv("-tp", "8"), car=CAR, seqs=seqs)
    cmd = argv("-tp", "8")
    assert ignored_params(spec, PCIE_8, cmd, {}).keys() == {"car"}
    assert refusal(spec, PCIE_8, {"car": True, "seqs": 8}, cmd, {}) == (
        f"car=True: vLLM ignores --disable-custom-all-reduce here ({off_reason(PCIE_8, cmd, {})})"
    )
    assert refusal(spec, PCIE_8, {"car": "default", "seqs": 8}, cmd, {}) is None
    nvlinked = nvml_topology(8, nvlink=full_mesh(8))
    assert ignored_params(spec, nvlinked, cmd, {}) == {}


def test_a_param_that_sets_the_tp_size_is_judged_per_configuration(tmp_path: Path) -> None:
    tp = {"args": ["--tensor-parallel-size", "{value}"], "choices": [2, 8]}
    spec = spec_with(tmp_path, argv(), car=CAR, tp=tp)
    assert ignored_params(spec, PCIE_8, argv(), {}) == {}  # not one answer for the space
    at8 = refusal(spec, PCIE_8, {"car": True, "tp": 8}, argv("--tensor-parallel-size", "8"), {})
    at2 = refusal(spec, PCIE_8, {"car": True, "tp": 2}, argv("--tensor-parallel-size", "2"), {})
    assert at8 is not None and at2 is None


def write_topology(tmp_path: Path, name: str) -> str:
    (tmp_path / name).write_text((FIXTURES / name).read_text())
    return name


def test_check_names_the_topology_and_the_ignored_param(tmp_path: Path) -> None:
    path = space_file(
        tmp_path,
        command=["{python}", "-m", "tuner.sim", "-tp", "8", "--port", "{port}"],
        params={"car": CAR},
        topology=write_topology(tmp_path, "pcie-5gpu-rtx4090.txt"),
    )
    report = check_space(
        load_space(path),
        storage=f"sqlite:///{tmp_path}/c.db",
        read_help=FakeHelp(),
        check_flags=False,
    )
    assert "topology: 5 GPUs, PCIe only (NODE/SYS/PHB between pairs), no NVLink (from file" in (
        messages(report, "ok")
    )
    warned = messages(report, "warning")
    # 5 GPUs for TP=8: the launch would fail; nothing skipped on a guess
    assert "params.car" not in warned
    path.write_text(path.read_text().replace("'8'", "'4'"))
    report = check_space(load_space(path), storage=f"sqlite:///{tmp_path}/c.db", check_flags=False)
    said = "params.car: vLLM ignores --disable-custom-all-reduce here: TP=4 on GPUs 0-3 with"
    assert said in messages(report, "warning")
    assert "the sweep records them as skipped and never launches them" in messages(
        report, "warning"
    )


def test_check_without_nvml_says_the_topology_is_unknown(tmp_path: Path) -> None:
    space = load_space(space_file(tmp_path, params={"car": CAR}))
    unknown = TopologyRead(None, "NVML not found (no NVIDIA driver)")
    report = check_space(
        space, storage=f"sqlite:///{tmp_path}/c.db", check_flags=False, topology=unknown
    )
    assert "topology: unknown (NVML not found (no NVIDIA driver))" in messages(report, "warning")
    # TP=1 (the command names none): vLLM never builds its custom all-reduce, topology or not
    assert "params.car: vLLM ignores --disable-custom-all-reduce here: TP=1" in messages(
        report, "warning"
    )


def test_a_topology_file_that_is_missing_is_an_error_naming_it(tmp_path: Path) -> None:
    space = load_space(space_file(tmp_path, topology="gone.txt"))
    report = check_space(space, storage=f"sqlite:///{tmp_path}/c.db", check_flags=False)
    assert not report.ok
    assert "topology: " in messages(report, "error") and "gone.txt" in messages(report, "error")
