"""A study on `tuner sim` with an injected PCIe topology at TP=8: the custom all-reduce flag,
which vLLM ignores there, is recorded as skipped and never launched; best shows the topology."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from tests.integration.sweep_helpers import FAST_SIM, run_tuner, tuner_in_process, write_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.telemetry.topology import PairLink, Topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CAR = {"args": ["--disable-custom-all-reduce"], "choices": ["default", True]}


def pcie_box(path: Path) -> str:
    """Eight GPUs over PCIe, two NUMA nodes: what `nvidia-smi topo -m` calls NODE and SYS."""
    pairs = tuple(
        PairLink(a, b, smi="NODE" if a // 4 == b // 4 else "SYS")
        for a in range(8)
        for b in range(a + 1, 8)
    )
    path.write_text(json.dumps(Topology(8, pairs).to_json()))
    return path.name


def test_an_ignored_setting_is_skipped_recorded_and_shown(tmp_path: Path) -> None:
    space = write_space(
        tmp_path,
        name="topo",
        server={"command": [*FAST_SIM, "--tensor-parallel-size", "8"]},
        params={"compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]}, "car": CAR},
        topology=pcie_box(tmp_path / "box.json"),
        stop={"baseline_launches": 1, "patience": 20, "confirmations": 0},
    )
    db = f"sqlite:///{tmp_path}/t.db"
    run = run_tuner("run", "--space", str(space), "--trials", "4", "--storage", db, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    said = run.stdout + run.stderr
    assert "topology: 8 GPUs, PCIe only (SYS/NODE between pairs), no NVLink" in said
    assert "skipped, never launched: car=True: vLLM ignores it here (TP=8 on GPUs" in said

    launches = Store(db).launches("topo")
    assert len(launches) >= 2  # the baseline and at least one compilation level
    assert not any("--disable-custom-all-reduce" in (row.argv or []) for row in launches)
    study = optuna.load_study(study_name="topo", storage=db)
    ignored = study.user_attrs[attrs.IGNORED]
    assert ignored["car"]["values"] == ["True"]
    assert "on GPUs 0-7 with no NVLink between GPU 0 and GPU 1" in ignored["car"]["reason"]
    assert study.user_attrs[attrs.TOPOLOGY]["gpus"] == 8
    # Any trial that set it anyway (TPE proposing freely) was refused before a launch.
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get(attrs.PARAMS, {}).get("car") not in (None, "default"):
            assert t.user_attrs[attrs.LAUNCHED] is False
            assert "vLLM ignores --disable-custom-all-reduce here" in t.user_attrs[attrs.REASON]

    trials = tuner_in_process("trials", "--study", "topo", "--storage", db, cwd=tmp_path)
    assert trials.returncode == 0, trials.stdout + trials.stderr
    assert "car=True skipped, never launched: vLLM ignores it here (TP=8" in trials.stdout

    best = tuner_in_process("best", "--study", "topo", "--storage", db, cwd=tmp_path)
    assert "Topology: 8 GPUs, PCIe only (SYS/NODE between pairs), no NVLink" in best.stdout
    as_json = tuner_in_process(
        "best", "--study", "topo", "--storage", db, "--format", "json", cwd=tmp_path
    )
    topology = json.loads(as_json.stdout)["topology"]
    assert topology["gpus"] == 8 and len(topology["pairs"]) == 28
    assert topology["summary"].startswith("8 GPUs, PCIe only")
    assert [s["param"] for s in topology["skipped"]] == ["car"]
