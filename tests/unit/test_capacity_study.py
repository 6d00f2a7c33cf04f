"""Capacity and goodput as study metrics: the space file, the runner's search glue, the
store keeping search levels apart, and `tuner best`'s figures (tuner/space/slo.py,
tuner/trial/capacity_round.py, tuner/views/best_capacity.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_bench_capacity import batch_server
from tests.unit.test_feasibility import STUDY, _level, _study
from tuner.errors import ConfigError
from tuner.space.spec import load_space, parse_space
from tuner.study.facts import feasibility
from tuner.trial.capacity_round import capacity_value, round_record, search_round
from tuner.views.best_capacity import figures_of

SERVER = {"command": ["srv", "--port", "{port}"]}
CAPACITY = {"limits": ["ttft_ms.p99 <= 100"]}


def _parse(**sections: Any):  # type: ignore[no-untyped-def]
    return parse_space({"server": SERVER, **sections}, Path("cap.yaml")).spec


@pytest.mark.parametrize(
    ("sections", "says"),
    [
        ({"objective": {"metric": "goodput"}}, "benchmark.goodput sets no SLO: add e.g."),
        (
            {
                "benchmark": {"concurrency": [8]},
                "objective": {"metric": "output_throughput", "subject_to": ["goodput@8 >= 3"]},
            },
            "benchmark.goodput sets no SLO",
        ),  # fmt: skip
        (
            {"benchmark": {"goodput": {"ttft": 500}}},
            "benchmark.goodput: unknown goodput SLO 'ttft'",
        ),
        ({"benchmark": {"goodput": {"ttft_ms": 0}}}, "the limit is a positive number of ms"),
        ({"objective": {"metric": "capacity"}}, "benchmark.capacity is not set: add e.g."),
        (
            {
                "benchmark": {"capacity": CAPACITY},
                "objective": {"metric": "capacity", "concurrency": 1},
            },
            "remove objective.concurrency",
        ),  # fmt: skip
        (
            {"benchmark": {"capacity": {"limits": ["ttft_ms.p99@8 <= 100"]}}},
            "benchmark.capacity.limits: limit 'ttft_ms.p99@8 <= 100': no @LEVEL here",
        ),
        ({"benchmark": {"capacity": {"limits": []}}}, "benchmark.capacity.limits"),
        (
            {"benchmark": {"capacity": {**CAPACITY, "start": 64, "max_concurrency": 32}}},
            "start (64) is above max_concurrency (32)",
        ),
    ],
)
def test_goodput_and_capacity_errors_name_the_key_and_the_fix(
    sections: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match="cap.yaml") as caught:
        _parse(**sections)
    assert says in str(caught.value)


def test_goodput_and_capacity_are_maximised_objectives() -> None:
    goodput = _parse(benchmark={"goodput": {"ttft_ms": 500, "tpot_ms": 50}},
                     objective={"metric": "goodput"})  # fmt: skip
    assert goodput.direction == "maximize" and goodput.benchmark.goodput == {
        "ttft_ms": 500,
        "tpot_ms": 50,
    }
    capacity = _parse(benchmark={"capacity": CAPACITY}, objective={"metric": "capacity"})
    assert capacity.direction == "maximize"
    assert capacity.benchmark.capacity is not None
    assert capacity.benchmark.capacity.max_levels == 12


def test_the_shipped_capacity_space_loads() -> None:
    spec = load_space("capacity-sim.yaml").spec
    assert spec.objective.metric == "capacity" and spec.benchmark.capacity is not None
    assert spec.benchmark.goodput == {"ttft_ms": 30}


def test_a_round_search_doubles_bisects_and_sends_two_requests_per_stream() -> None:
    spec = _parse(benchmark={"requests": 16, "capacity": {**CAPACITY, "max_concurrency": 64}})
    server = batch_server(8)
    sent: list[tuple[int, int]] = []

    def measure(concurrency: int, requests: int):  # type: ignore[no-untyped-def]
        sent.append((concurrency, requests))
        return server(concurrency)

    found = search_round(spec.benchmark, measure)
    assert found.capacity == 8 and found.first_broken == 9 and found.stop == "resolved"
    assert capacity_value(found) == 8.0
    assert sent[:5] == [(1, 16), (2, 16), (4, 16), (8, 16), (16, 32)]  # max(16, 2 x streams)
    record = round_record(found, 2)
    assert record["round"] == 2 and record["capacity"] == 8 and record["knee"] is not None


def test_no_level_within_the_limits_is_a_capacity_of_zero() -> None:
    spec = _parse(benchmark={"capacity": {"limits": ["ttft_ms.p99 <= 1"]}})
    found = search_round(spec.benchmark, lambda c, n: batch_server(8)(c))
    assert found.capacity is None and capacity_value(found) == 0.0


def test_capacity_search_levels_are_not_read_as_the_fixed_levels(tmp_path: Path) -> None:
    _, store = _study(tmp_path, STUDY[:1])
    (launch,) = store.launches("slo")
    limits = feasibility.study_limits(load_space(tmp_path / "slo.yaml"))
    before = feasibility.limit_values(store, [launch.id], limits)[launch.id][0]
    # A search level at the limit's concurrency, far past the limit: not a fixed level.
    store.add_level(launch.id, round_index=0, summary=_level(64, 1.0, 9999.0), requests=[],
                    capacity_search=True)  # fmt: skip
    after = feasibility.limit_values(store, [launch.id], limits)[launch.id][0]
    assert before is not None and after is not None and after.mean == before.mean < 100
    assert all(lv.summary["ttft_ms"]["p99"] < 100 for lv in store.levels(launch.id))
    assert len(store.levels(launch.id, capacity_search=True)) == 1


def test_best_figures_take_the_median_capacity_and_the_means_there() -> None:
    def search(capacity: int | None, knee: int | None, tok_s: float) -> dict[str, Any]:
        at = None if capacity is None else {"output_throughput": tok_s, "ttft_ms": {"p99": 20.0}}
        return {"capacity": capacity, "first_broken": (capacity or 0) + 1, "knee": knee,
                "at_capacity": at}  # fmt: skip

    figures = figures_of(3, [search(12, 12, 500.0), search(11, None, 400.0), search(12, 16, 600.0)])
    assert figures.capacity == 12 and figures.capacities == (12, 11, 12)
    assert figures.first_broken == 13 and figures.knee == 14 and figures.knees_found == 2
    assert figures.at_capacity["output_throughput"] == pytest.approx(500.0)
    assert figures.at_capacity["ttft_ms_p99"] == pytest.approx(20.0)
    assert figures.at_capacity["itl_ms_mean"] is None
    text = figures.sentence()
    assert text.startswith("capacity 12 streams (12, 11, 12): 500.0 output tok/s, TTFT p99 20 ms")
    assert "a limit broke at 13; knee at 14 streams (2 of 3 searches)" in text
    none_held = figures_of(None, [search(None, None, 0.0)])
    assert none_held.capacity == 0 and none_held.at_capacity["output_throughput"] is None
