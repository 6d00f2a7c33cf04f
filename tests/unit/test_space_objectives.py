"""`objectives:` in the space file: what it resolves to, and the errors that say the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuner.errors import ConfigError
from tuner.space.objectives import Objective, is_multi_objective, study_objectives
from tuner.space.spec import load_space, parse_space

BASE: dict[str, Any] = {
    "server": {"command": ["srv", "--port", "{port}"]},
    "benchmark": {"concurrency": [1, 64]},
}
TWO = [{"metric": "output_throughput", "concurrency": 64}, {"metric": "ttft_ms_p99"}]


def parse(**keys: Any) -> Any:
    return parse_space({**BASE, **keys}, Path("space.yaml")).spec


def error(**keys: Any) -> str:
    with pytest.raises(ConfigError) as exc:
        parse(**keys)
    return str(exc.value)


def test_several_objectives_resolve_levels_and_directions() -> None:
    spec = parse(objectives=TWO)
    assert is_multi_objective(spec)
    assert study_objectives(spec) == (
        Objective("output_throughput", 64, "maximize"),
        Objective("ttft_ms_p99", 1, "minimize"),  # the first benchmark level
    )
    # The first fills `objective`, which one-objective code (the runner's rounds) reads.
    assert (spec.objective.metric, spec.objective_concurrency) == ("output_throughput", 64)
    flipped = parse(objectives=[TWO[0], {**TWO[1], "direction": "maximize"}])
    assert study_objectives(flipped)[1].direction == "maximize"


def test_limits_stay_under_objective_subject_to() -> None:
    spec = parse(objectives=TWO, objective={"subject_to": ["ttft_ms.p99@64 <= 60"]})
    assert spec.objective.subject_to == ["ttft_ms.p99@64 <= 60"]
    assert len(study_objectives(spec)) == 2


def test_one_objective_is_as_before() -> None:
    spec = parse(objective={"metric": "tpot_ms_mean", "concurrency": 64})
    assert not is_multi_objective(spec) and spec.objectives is None
    assert study_objectives(spec) == (Objective("tpot_ms_mean", 64, "minimize"),)


def test_unknown_metric_names_the_item_and_the_metrics() -> None:
    text = error(objectives=[TWO[0], {"metric": "ttft_p99"}])
    assert "space.yaml: objectives[1].metric: unknown metric 'ttft_p99'" in text
    assert "ttft_ms_p99" in text  # the list to pick from


def test_unknown_level_names_the_item_and_the_fix() -> None:
    text = error(objectives=[TWO[0], {"metric": "ttft_ms_p99", "concurrency": 8}])
    assert "objectives[1].concurrency is 8" in text
    assert "add 8 to benchmark.concurrency" in text


def test_objectives_with_an_explicit_objective_metric_says_to_use_one() -> None:
    text = error(objectives=TWO, objective={"metric": "output_throughput"})
    assert "objectives and objective.metric are both set: use one of them" in text


@pytest.mark.parametrize("items", [[], [TWO[0]]])
def test_fewer_than_two_says_to_use_objective(items: list[Any]) -> None:
    text = error(objectives=items)
    assert "at least 2" in text and "objective:" in text


def test_unknown_key_in_an_item() -> None:
    text = error(objectives=[TWO[0], {"metric": "ttft_ms_p99", "levl": 64}])
    assert "objectives[1].levl: unknown key" in text


def test_shipped_pareto_space_has_two_objectives() -> None:
    spec = load_space("pareto-sim.yaml").spec
    assert [o.name for o in study_objectives(spec)] == [
        "output_throughput@64",
        "ttft_ms_p99@64",
    ]


def test_capacity_among_several_objectives_says_what_to_write() -> None:
    text = error(objectives=[TWO[0], {"metric": "capacity"}])
    assert "objectives[1].metric is capacity" in text
    assert "objective.metric: capacity" in text


def test_goodput_objective_needs_its_slos() -> None:
    text = error(objectives=[TWO[0], {"metric": "goodput", "concurrency": 64}])
    assert "objectives[1].metric is goodput" in text and "benchmark.goodput" in text
    spec = parse(
        objectives=[TWO[0], {"metric": "goodput", "concurrency": 64}],
        benchmark={**BASE["benchmark"], "goodput": {"ttft_ms": 1000}},
    )
    assert [o.metric for o in study_objectives(spec)] == ["output_throughput", "goodput"]
