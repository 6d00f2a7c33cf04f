"""The sweep on a fake NVML's topology: the custom all-reduce flag vLLM ignores over PCIe at
TP=8 is recorded and never launched; on fully NVLinked GPUs it is searched like any param."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import yaml

from tests.fakes import FakeRunner, FakeTopologyNvml, RecordingObserver
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import SweepOutcome, run_sweep
from tuner.study.run.topology import unknown_topology_line
from tuner.telemetry.gpu import NullGpuBackend
from tuner.telemetry.topology import TopologyRead, read_topology

SPACE = {
    "study": "car",
    "server": {"command": ["srv", "--tensor-parallel-size", "8", "--port", "{port}"]},
    "params": {
        "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
        "car": {"args": ["--disable-custom-all-reduce"], "choices": ["default", True]},
    },
    "stop": {"patience": 8, "baseline_launches": 1, "confirmations": 1, "futility": 0},
}
MESH = {(a, b) for a in range(8) for b in range(a + 1, 8)}


def _run(
    tmp_path: Path, nvml: FakeTopologyNvml, **changes: object
) -> tuple[SweepOutcome, FakeRunner, optuna.Study]:
    path = tmp_path / "car.yaml"
    path.write_text(yaml.safe_dump({**SPACE, **changes}))
    storage = f"sqlite:///{tmp_path}/car.db"
    runner = FakeRunner(Store(storage), "car", speed=lambda p: 100.0, seed=1)

    def read() -> TopologyRead:
        return read_topology(nvml, run_smi=None)

    result = run_sweep(
        load_space(path), RunRequest(storage, 20, seed=1), Seams(runner=runner, read_topology=read)
    )
    return result, runner, optuna.load_study(study_name="car", storage=storage)


@pytest.mark.parametrize("method", ["local", "tpe"])
def test_over_pcie_the_flag_is_recorded_and_never_launched(tmp_path: Path, method: str) -> None:
    result, runner, study = _run(tmp_path, FakeTopologyNvml(8), search={"method": method})
    assert runner.launched and not any("car" in changed for _, changed in runner.launched)
    assert result.stop_reason == "exhausted"  # the grid left: compilation alone
    ignored = study.user_attrs[attrs.IGNORED]
    assert list(ignored) == ["car"] and ignored["car"]["values"] == ["True"]
    assert ignored["car"]["reason"].startswith("TP=8 on GPUs 0-7 with no NVLink between GPU 0")
    assert study.user_attrs[attrs.TOPOLOGY]["summary"] == (
        "8 GPUs, PCIe only (SYS between pairs), no NVLink"
    )
    for t in study.trials:  # TPE may propose it: refused before a launch, with the reason
        if t.user_attrs.get(attrs.PARAMS, {}).get("car") is True:
            assert t.state == optuna.trial.TrialState.PRUNED
            assert t.user_attrs[attrs.LAUNCHED] is False
            assert "vLLM ignores --disable-custom-all-reduce here" in t.user_attrs[attrs.REASON]


def test_on_fully_nvlinked_gpus_the_flag_is_searched(tmp_path: Path) -> None:
    _, runner, study = _run(tmp_path, FakeTopologyNvml(8, nvlink=MESH))
    assert any(changed.get("car") is True for _, changed in runner.launched)
    assert study.user_attrs[attrs.IGNORED] == {}
    assert study.user_attrs[attrs.TOPOLOGY]["summary"] == "8 GPUs, fully NVLinked"


def test_without_nvml_nothing_is_skipped_and_the_reason_is_stored(tmp_path: Path) -> None:
    gone = FakeTopologyNvml(0, init_error=FakeTopologyNvml.NVMLError_LibraryNotFound())
    _, runner, study = _run(tmp_path, gone)
    assert any(changed.get("car") is True for _, changed in runner.launched)
    assert study.user_attrs[attrs.TOPOLOGY] == {"unavailable": "NVML not found (no NVIDIA driver)"}


def test_without_nvml_a_run_says_why_once(tmp_path: Path) -> None:
    """The GPU backend's line already said NVML is missing (the console prints it): the
    topology's line says what that costs without naming NVML again."""
    gone = FakeTopologyNvml(0, init_error=FakeTopologyNvml.NVMLError_LibraryNotFound())
    path = tmp_path / "car.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    storage = f"sqlite:///{tmp_path}/car.db"
    observer = RecordingObserver()
    run_sweep(
        load_space(path),
        RunRequest(storage, 3, seed=1),
        Seams(
            observer=observer,
            gpu=NullGpuBackend("NVML not found (no NVIDIA driver): GPU telemetry off"),
            runner=FakeRunner(Store(storage), "car", speed=lambda p: 100.0, seed=1),
            read_topology=lambda: read_topology(gone, run_smi=None),
        ),
    )
    said = [e[1] for e in observer.events if e[0] == "message"]
    assert [m for m in said if "NVML" in m] == []
    assert (
        "topology: unknown: settings that depend on it (the custom all-reduce) stay searched"
    ) in said


def test_an_unknown_topology_names_its_reason_when_nothing_said_it() -> None:
    unknown = TopologyRead(None, "NVML not found (no NVIDIA driver)")
    assert unknown_topology_line(unknown) == (
        "unknown (NVML not found (no NVIDIA driver)): settings that depend on it "
        "(the custom all-reduce) stay searched"
    )
    said = "NVML not found (no NVIDIA driver): GPU telemetry off"
    assert str(unknown_topology_line(unknown, said)).startswith("unknown: settings")
    other = unknown_topology_line(unknown, "no NVIDIA GPU: GPU telemetry off")
    assert str(other).startswith("unknown (NVML not found")
    assert str(unknown_topology_line(TopologyRead(None, None))).startswith("unknown: settings")
