"""Why a full load takes what it takes, and the lever the rule picks (study/facts/load_*)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tuner.launcher.load_phases import LoadPhases, load_phases
from tuner.storage import LaunchRow
from tuner.study.facts.load_explained import GIB, LoadHost, explain_load
from tuner.study.facts.load_levers import CAPTURE_FLAG, STRATEGY_FLAG
from tuner.telemetry.inventory import Inventory
from tuner.telemetry.weights_disk import filesystem_of, weights_facts

KIMI = 547e9
BOX = LoadHost(ram_total=512e9, ram_available=480e9, weights_bytes=KIMI, weights_fs="ext4")
SMALL = dataclasses.replace(BOX, weights_bytes=230e9)
OFFERS = frozenset({STRATEGY_FLAG, CAPTURE_FLAG, "--port"})


def row(
    n: int,
    healthy: float,
    *,
    role: str = "baseline",
    config: str = "base",
    fidelity: str | None = "full",
    argv: tuple[str, ...] = (),
    cached: bool = False,
    said: dict[str, Any] | None = None,
    **phases: float,
) -> LaunchRow:
    stored = LoadPhases(
        **{f"{k}_s": v for k, v in phases.items()}, healthy_s=healthy, compile_cached=cached
    ).to_json()
    stored.update(said or {})
    return LaunchRow(
        id=n,
        role=role,
        config_hash=config,
        fidelity=fidelity,
        argv=["vllm", "serve", "m", *argv],
        seconds_to_healthy=healthy,
        load_phases=stored,
    )


def cold_loads(*weights: float, **extra: Any) -> list[LaunchRow]:
    return [
        row(i, w + 80.0, weights=w, compile=50.0, cuda_graphs=20.0, **extra)
        for i, w in enumerate(weights)
    ]


def test_weights_larger_than_the_ram_name_prefetch_with_its_source_and_caveat() -> None:
    found = explain_load(cold_loads(2160.0, 2150.0), BOX, OFFERS)
    assert found is not None
    f = found.facts
    assert f.dominant == "weights" and f.fits is False
    assert f.read_rate == pytest.approx(KIMI / 2155.0)
    assert found.lever is not None and "prefetch" in found.lever.change
    assert found.lever.source == "vLLM PR #36012" and "evicted" in found.lever.caveat
    text = found.sentence()
    assert text.startswith("the weights do not fit the page cache (547 GB against 480 GB")
    assert "512 GB in all; on ext4): every load reads the disk at 254 MB/s" in text
    assert "from 1,500 s to 435 s (vLLM PR #36012)" in text


def test_a_cold_first_load_that_fits_is_measured_against_the_warm_ones() -> None:
    found = explain_load(cold_loads(900.0, 75.0, 76.0), SMALL, OFFERS)
    assert found is not None and found.facts.fits
    assert (found.facts.cold_s, found.facts.warm_s) == (900.0, 75.5)
    assert found.lever is not None and "page cache" in found.lever.change
    assert "900 s cold, 76 s warm (measured in this study)" in found.sentence()


def test_warm_loads_that_fit_name_no_lever() -> None:
    found = explain_load(cold_loads(75.0, 76.0), SMALL, OFFERS)
    assert found is not None and found.lever is None
    assert "building and copying" in found.no_lever
    assert "the weights phase reads them at 3.0 GB/s" in found.sentence()


def test_a_network_filesystem_read_slowly_names_prefetch_without_the_caveat() -> None:
    host = dataclasses.replace(SMALL, weights_fs="nfs4")
    found = explain_load(cold_loads(600.0, 610.0), host, OFFERS)
    assert found is not None and found.facts.fits and found.facts.network_fs
    assert found.lever is not None and "prefetch" in found.lever.change
    assert found.lever.caveat == ""
    # the same read from a local disk: it fits, no disk lever
    local = explain_load(cold_loads(600.0, 610.0), SMALL, OFFERS)
    assert local is not None and local.lever is None


def test_no_prefetch_where_the_launches_prefetch_or_the_server_lacks_the_flag() -> None:
    rows = cold_loads(2160.0, 2150.0, argv=(STRATEGY_FLAG, "prefetch"))
    found = explain_load(rows, BOX, OFFERS)
    assert found is not None and found.facts.strategy == "prefetch" and found.lever is None
    assert "prefetch already" in found.no_lever
    lacking = explain_load(cold_loads(2160.0), BOX, frozenset({"--port"}))
    assert lacking is not None and lacking.lever is None and STRATEGY_FLAG in lacking.no_lever
    unknown = explain_load(cold_loads(2160.0), BOX, None)  # --help not cached: named anyway
    assert unknown is not None and unknown.lever is not None


def test_weights_not_on_this_machine_are_said_so() -> None:
    found = explain_load(cold_loads(500.0), LoadHost(), OFFERS)
    assert found is not None and found.facts.fits is None and found.lever is None
    assert found.no_lever == "the weights' size is not known on this machine"
    assert found.sentence().startswith("the weights take 500 s of a full load's 580 s")


def test_compile_graphs_and_the_rest_each_have_their_rule() -> None:
    compiled = [row(0, 300.0, weights=40.0, compile=200.0, cuda_graphs=20.0)]
    found = explain_load(compiled, SMALL, OFFERS)
    assert found is not None and found.facts.dominant == "compile"
    assert found.lever is not None and "VLLM_CACHE_ROOT" in found.lever.change
    assert found.sentence().startswith("torch.compile takes most of a full load (200 s of 300 s")
    cached = [row(0, 300.0, weights=40.0, compile=200.0, cuda_graphs=20.0, cached=True)]
    again = explain_load(cached, SMALL, OFFERS)
    assert again is not None and again.lever is None and "cache already" in again.no_lever
    graphs = [row(0, 300.0, weights=40.0, compile=20.0, cuda_graphs=200.0)]
    found = explain_load(graphs, SMALL, OFFERS)
    assert found is not None and found.lever is not None and CAPTURE_FLAG in found.lever.change
    rest = [row(0, 300.0, weights=40.0, compile=20.0, cuda_graphs=20.0)]
    found = explain_load(rest, SMALL, OFFERS)
    assert found is not None and found.facts.dominant == "rest" and found.lever is None


def test_the_defaults_full_loads_only_and_the_logs_figures_first() -> None:
    said = {"checkpoint_gib": 509.44, "checkpoint_fs": "lustre", "ram_available_gib": 100.0}
    rows = [
        *cold_loads(1000.0, 1010.0, said=said),
        row(5, 90.0, role="search", config="other", weights=10.0),  # another configuration
        row(6, 30.0, fidelity="screen", weights=1.0),  # random weights
    ]
    found = explain_load(rows, BOX, OFFERS)
    assert found is not None and found.facts.launches == 2
    assert found.facts.weights_bytes == pytest.approx(509.44 * GIB)
    assert found.facts.ram_available == pytest.approx(100.0 * GIB)
    assert found.facts.filesystem == "lustre" and found.facts.ram_total == 512e9
    assert found.to_json()["fits"] is False and found.to_json()["sentence"] == found.sentence()


def test_nothing_to_explain_without_a_healthy_full_load_with_phases() -> None:
    assert explain_load([], BOX) is None
    assert explain_load([row(0, 30.0, fidelity="screen", weights=1.0)], BOX) is None
    bare = LaunchRow(id=1, role="baseline", config_hash="b", seconds_to_healthy=9.0, argv=[])
    assert explain_load([bare], BOX) is None


def test_vllms_checkpoint_line_is_read_with_the_phases() -> None:
    line = (
        "(Worker_TP0 pid=554) INFO 08-30 03:00:44 [weight_utils.py:866] Filesystem type for "
        "checkpoints: NFS4. Checkpoint size: 28.75 GiB. Available RAM: 23.20 GiB."
    )
    phases = load_phases([line, "Model loading took 7.3 GiB and 5.49 seconds"])
    assert (phases.checkpoint_gib, phases.checkpoint_fs) == (28.75, "nfs4")
    assert phases.ram_available_gib == 23.20
    back = LoadPhases.from_json(phases.to_json())
    assert back == phases


def test_the_inventory_keeps_the_run_hosts_figures(tmp_path: Path) -> None:
    (tmp_path / "model-00001.safetensors").write_bytes(b"x" * 1000)
    (tmp_path / "model-00002.safetensors").write_bytes(b"x" * 500)
    (tmp_path / "pytorch_model.bin").write_bytes(b"x" * 7)  # another format: not read
    facts = weights_facts(tmp_path)
    assert facts is not None and facts.bytes == 1500
    assert facts.fstype == (filesystem_of(tmp_path) or ("?", ""))[0]
    assert weights_facts(tmp_path / "nothing-here") is None
    data = {"ram_total_gib": 512.0, "ram_available_gib": 480.0, "weights_bytes": 1500}
    host = LoadHost.from_inventory({**data, "weights_fs": "xfs", "ram_total_gib": True})
    assert host.ram_total is None  # a flag is not a figure
    host = LoadHost.from_inventory({**data, "weights_fs": "xfs"})
    assert (host.ram_total, host.weights_bytes, host.weights_fs) == (512 * GIB, 1500.0, "xfs")
    old = Inventory.from_dict({"hostname": "h", "gpus": []})  # stored before these fields
    assert old.ram_available_gib is None and old.weights_bytes is None
