"""tuner best on a study run on two kinds of hardware: one population at a time, hosts named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.views_helpers import BASELINE, BASELINE_AGAIN, hand_study
from tuner.errors import ConfigError
from tuner.storage import Store
from tuner.views.best import best_report

FAST_ON_B = ({"NCCL_PROTO": "LL"}, [120.0, 121.0, 119.5])


def _two_kinds(tmp_path: Path) -> str:
    """Baseline twice and LL once on gpu-a (fingerprint aaa), LL once on gpu-b (bbb)."""
    storage = hand_study(
        tmp_path, [BASELINE, BASELINE_AGAIN, ({"NCCL_PROTO": "LL"}, [82.0] * 3), FAST_ON_B]
    )
    store = Store(storage)
    for launch in store.launches("hand"):
        on_b = launch.trial_number == 3
        store.update_launch(
            launch.id, host="gpu-b" if on_b else "gpu-a", fingerprint="bbb" if on_b else "aaa"
        )
    store.register_worker(
        "hand",
        "gpu-a:1:1",
        host="gpu-a",
        fingerprint="aaa",
        hardware={"gpu_count": 8, "gpu_model": "NVIDIA H200", "driver": "570"},
    )
    store.register_worker(
        "hand",
        "gpu-b:1:1",
        host="gpu-b",
        fingerprint="bbb",
        hardware={"gpu_count": 8, "gpu_model": "NVIDIA H100", "driver": "570"},
    )
    return storage


def test_the_kind_with_most_launches_is_answered_for_and_the_other_named(tmp_path: Path) -> None:
    report = best_report(_two_kinds(tmp_path), "hand")
    assert report.hardware is not None
    assert report.hardware.used.fingerprint == "aaa"
    assert report.hardware.used.hosts == ("gpu-a",)
    assert report.best is not None and report.best.launches + 0 >= 1
    # gpu-b's 120 tok/s is not in the comparison: LL has one launch (gpu-a's), at 82.
    assert report.best.value < 100
    data = report.to_json()
    assert data["hosts"] == ["gpu-a"]
    assert data["fingerprint"]["hardware"].startswith("8 x NVIDIA H200")
    (other,) = data["other_fingerprints"]
    assert other["fingerprint"] == "bbb" and other["hosts"] == ["gpu-b"] and other["launches"] == 1
    lines = report.hardware.lines()
    assert lines[0].startswith("Hosts: gpu-a (8 x NVIDIA H200")
    assert "--fingerprint bbb" in lines[1]


def test_another_kind_is_answered_for_on_request_and_an_unknown_one_refused(
    tmp_path: Path,
) -> None:
    storage = _two_kinds(tmp_path)
    report = best_report(storage, "hand", fingerprint="bbb")
    assert report.hardware is not None and report.hardware.used.hosts == ("gpu-b",)
    assert report.best is None  # gpu-b ran no baseline: nothing to compare against
    with pytest.raises(ConfigError, match="--fingerprint zzz: .*aaa \\(3 launches\\)"):
        best_report(storage, "hand", fingerprint="zzz")


def test_a_study_on_one_kind_of_hardware_just_names_its_hosts(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE, BASELINE_AGAIN])
    report = best_report(storage, "hand")
    assert report.hardware is not None and report.hardware.others == ()
    data = report.to_json()
    assert data["hosts"] == [Store(storage).launches("hand")[0].host]
    assert "other_fingerprints" not in data


def test_the_hosts_line_gives_the_versions_the_servers_reported(tmp_path: Path) -> None:
    """The fingerprint is taken before any server runs, from the packages beside tuner
    (NCCL -, vLLM -); the inventory, which `tuner show` prints, has what the servers said."""
    storage = hand_study(tmp_path, [BASELINE, BASELINE_AGAIN])
    store = Store(storage)
    for launch in store.launches("hand"):
        store.update_launch(launch.id, host="vm", fingerprint="ccc")
    store.register_worker(
        "hand",
        "vm:1:1",
        host="vm",
        fingerprint="ccc",
        hardware={"gpu_count": 0, "cpu_model": "AMD EPYC", "cpu_count": 2},
    )
    lines = best_report(storage, "hand").hardware.lines()  # type: ignore[union-attr]
    assert lines == ["Hosts: vm (no GPU, 2 x AMD EPYC, NCCL -, vLLM -)"]
    inventory = {"hostname": "vm", "nccl_version": "2.31.0+cuda12.9", "server_version": "0.0.0-sim"}
    store.update_study("hand", inventory=inventory)
    lines = best_report(storage, "hand").hardware.lines()  # type: ignore[union-attr]
    assert lines == ["Hosts: vm (no GPU, 2 x AMD EPYC, NCCL 2.31.0+cuda12.9, vLLM 0.0.0-sim)"]
    # the digest stays the fingerprint's: a resumed study still matches its hosts
    assert best_report(storage, "hand").to_json()["fingerprint"]["fingerprint"] == "ccc"
