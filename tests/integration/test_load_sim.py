"""A study of the load levers on the simulator (search_spaces/load-sim.yaml): the objective is
each launch's time to healthy, the weights' read follows the page cache, and `tuner best`
says why a load takes what it takes and the lever most likely to cut it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tuner.check import check_space
from tuner.launcher.load_phases import LoadPhases
from tuner.report.data import build_report
from tuner.report.html import render
from tuner.space.spec import load_space, resolve_space_path
from tuner.storage import LaunchStatus, Store
from tuner.study.run.request import RunRequest
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_study_of_the_load_levers_explains_its_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))  # --help cached here
    space = yaml.safe_load(resolve_space_path("load-sim.yaml").read_text())
    # Shorter benchmarks than the shipped file's: the load is what is measured here.
    space["benchmark"].update(requests=8, warmup=0, rounds=1)
    path = tmp_path / "load-sim.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    storage = f"sqlite:///{tmp_path}/e.db"
    assert check_space(load_space(path), storage=storage).ok

    run_sweep(load_space(path), RunRequest(storage, 5, seed=0))

    rows = Store(storage).launches("sim-load")
    done = [r for r in rows if r.status == LaunchStatus.COMPLETE]
    assert len(done) >= 4
    for row in done:  # one value a launch: its time to healthy, whatever the rounds
        assert row.objective_rounds == [pytest.approx(row.seconds_to_healthy)]
        phases = LoadPhases.from_json(row.load_phases)
        assert phases is not None and phases.checkpoint_gib == 510.0
    weights = [LoadPhases.from_json(r.load_phases).weights_s for r in done]  # type: ignore[union-attr]
    plain = [
        w
        for r, w in zip(done, weights, strict=True)
        if not r.params.get("load_strategy") or r.params["load_strategy"] == "default"
    ]
    # The first load reads the disk; later ones find 265 of 548 GB cached (20 vs 36 min).
    assert plain[0] is not None and plain[1] is not None
    assert plain[1] / plain[0] == pytest.approx(20 / 36, rel=0.15)

    answer = best_report(storage, "sim-load")
    load = answer.load
    assert load is not None and load.facts.fits is False and load.facts.filesystem == "ext4"
    assert load.lever is not None and "prefetch" in load.lever.change
    assert load.sentence().startswith("the weights do not fit the page cache (548 GB against")
    assert answer.to_json()["load"]["lever"]["source"] == "vLLM PR #36012"
    # The report: the whole cost plan and the timing section say it too.
    data = build_report(storage, "sim-load")
    assert any(line.startswith("  why: the weights do not fit") for line in data.plan)
    assert '<p id="load-explained">The weights do not fit the page cache' in render(data)
