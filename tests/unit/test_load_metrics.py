"""A launch's load as a metric an objective or a limit names: one value per launch, no level."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tuner.errors import BenchmarkError, ConfigError
from tuner.launcher.load_metrics import load_metric_value
from tuner.launcher.load_phases import LoadPhases
from tuner.space.limits import parse_limit
from tuner.space.objectives import study_objectives
from tuner.space.spec import load_space, parse_space
from tuner.storage import Store
from tuner.study.facts import feasibility
from tuner.study.facts.metrics import MetricRead, launch_values
from tuner.study.facts.objective_values import launch_means
from tuner.trial.runner import TrialRunner
from tuner.vocabulary import LOAD_METRICS, OBJECTIVE_METRICS

SERVER = {"command": ["srv", "--port", "{port}"]}
BENCH = {"concurrency": [1, 16]}


def spec(**sections: Any) -> Any:
    return parse_space({"server": SERVER, "benchmark": BENCH, **sections}, Path("l.yaml"))


def test_every_load_metric_is_minimised_and_named_without_a_level() -> None:
    assert all(OBJECTIVE_METRICS[m] == "minimize" for m in LOAD_METRICS)
    space = spec(
        objectives=[
            {"metric": "time_to_healthy_s"},
            {"metric": "output_throughput", "concurrency": 16},
        ]
    )
    names = [o.name for o in study_objectives(space.spec)]
    assert names == ["time_to_healthy_s", "output_throughput@16"]
    assert space.spec.direction == "minimize"


def test_a_level_on_a_load_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="one value per launch .* remove concurrency"):
        spec(objective={"metric": "load_weights_s", "concurrency": 16})
    with pytest.raises(ValueError, match="write 'time_to_healthy_s <= 900'"):
        parse_limit("time_to_healthy_s@16 <= 900", level="required")
    with pytest.raises(ValueError, match="capacity search measures a running server"):
        parse_limit("time_to_healthy_s <= 900", level="forbidden")
    limit = parse_limit("load_compile_s <= 60", level="required")  # no level needed
    assert (limit.metric, limit.level, limit.text) == (
        "load_compile_s",
        None,
        "load_compile_s <= 60",
    )


def test_a_load_objective_refuses_screening_and_the_probe() -> None:
    screening = {"args": ["--load-format", "dummy"]}
    with pytest.raises(ConfigError, match="screening launch loads random weights"):
        spec(objective={"metric": "time_to_healthy_s"}, screening=screening)
    probe = {"command": ["p", "{sizes}"], "sizes": [1024, 2048]}
    with pytest.raises(ConfigError, match="share of a decode step"):
        spec(objective={"metric": "time_to_healthy_s"}, probe=probe)


def test_the_shipped_load_spaces_read() -> None:
    for name, limit in (("load-sim.yaml", "@16"), ("load.yaml", "@256")):
        space = load_space(name).spec
        assert space.objective.metric == "time_to_healthy_s" and space.direction == "minimize"
        assert limit in space.objective.subject_to[0]
        assert "load_strategy" in space.params and space.screening is None


def test_a_load_value_from_the_healthy_seconds_or_the_logs_phases() -> None:
    phases = LoadPhases(weights_s=30.0, compile_s=12.0, healthy_s=60.0)
    assert load_metric_value("time_to_healthy_s", 60.0, None) == 60.0
    assert load_metric_value("load_weights_s", 60.0, phases) == 30.0
    assert load_metric_value("load_compile_s", 60.0, phases.to_json()) == 12.0
    assert load_metric_value("load_cudagraph_s", 60.0, phases) == 0.0  # not run: none said
    assert load_metric_value("load_weights_s", 60.0, LoadPhases()) is None  # log said nothing
    assert load_metric_value("load_weights_s", 60.0, None) is None
    with pytest.raises(ValueError, match="not a launch's load"):
        load_metric_value("output_throughput", 60.0, phases)


def _store(tmp_path: Path) -> tuple[Store, list[int]]:
    store = Store(f"sqlite:///{tmp_path}/e.db")
    ids = []
    for healthy, weights in ((100.0, 70.0), (80.0, 50.0)):
        launch = store.add_launch(
            study="l", role="search", config_hash="c", params={}, env={}, argv=["srv"]
        )
        phases = LoadPhases(weights_s=weights, healthy_s=healthy).to_json()
        store.update_launch(launch, seconds_to_healthy=healthy, load_phases=phases)
        for r in range(2):
            summary = {
                "concurrency": 16,
                "completed": 16,
                "errors": 0,
                "output_throughput": 3000.0 + r,
            }
            store.add_level(launch, round_index=r, summary=summary, requests=[])
        ids.append(launch)
    return store, ids


def test_limits_and_objectives_read_the_load_from_the_launch_row(tmp_path: Path) -> None:
    store, (first, second) = _store(tmp_path)
    reads = [MetricRead("time_to_healthy_s", None), MetricRead("output_throughput", 16)]
    values = launch_values(store, [first, second], reads)
    healthy, throughput = values[first]
    assert healthy is not None and (healthy.mean, healthy.n, healthy.se) == (100.0, 1, None)
    assert throughput is not None and throughput.mean == 3000.5 and throughput.n == 2
    assert values[second][0] is not None and values[second][0].mean == 80.0
    space = tmp_path / "l.yaml"
    space.write_text(
        "study: l\nserver: {command: [srv, --port, '{port}']}\nbenchmark: {concurrency: [16]}\n"
        "objective: {metric: output_throughput, subject_to: ['time_to_healthy_s <= 90']}\n"
    )
    loaded = load_space(space)
    assert feasibility.optuna_values(store, loaded, first) == [pytest.approx(10.0)]
    assert feasibility.optuna_values(store, loaded, second) == [pytest.approx(-10.0)]
    objectives = study_objectives(spec(objective={"metric": "load_weights_s"}).spec)
    assert launch_means(store, second, objectives) == [50.0]
    assert math.isnan(launch_means(store, 999, objectives)[0])


class _Runner(TrialRunner):
    def __init__(self, metric: str) -> None:  # only what _load_value reads
        self.spec = spec(objective={"metric": metric}).spec


def test_the_runner_gives_a_load_objective_its_one_value() -> None:
    phases = LoadPhases(weights_s=30.0, healthy_s=60.0).to_json()
    assert _Runner("time_to_healthy_s")._load_value(61.5, phases) == 61.5
    assert _Runner("load_weights_s")._load_value(61.5, phases) == 30.0
    assert _Runner("output_throughput")._load_value(61.5, phases) is None
    with pytest.raises(BenchmarkError, match="said no phase of its load"):
        _Runner("load_compile_s")._load_value(61.5, None)
