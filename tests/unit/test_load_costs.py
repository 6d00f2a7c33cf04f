"""What a load costs per fidelity, and the sentence that says what screening saves."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.launcher.load_phases import LoadPhases
from tuner.storage import LaunchRow
from tuner.study.facts.load_costs import LoadCosts, load_costs, load_costs_sentence


def row(
    healthy: float | None,
    fidelity: str | None = None,
    **phases: float,
) -> LaunchRow:
    stored: dict[str, Any] | None = None
    if phases:
        stored = LoadPhases(**{f"{k}_s": v for k, v in phases.items()}, healthy_s=healthy).to_json()
    return LaunchRow(fidelity=fidelity, seconds_to_healthy=healthy, load_phases=stored)


FULL = [
    row(2160.0, "full", weights=2046.0, compile=54.0, cuda_graphs=24.0),
    row(2200.0, None, weights=2090.0, compile=50.0, cuda_graphs=24.0),  # before fidelities
    row(2100.0, "full", weights=2000.0, compile=58.0, cuda_graphs=22.0),
]
SCREEN = [
    row(114.0, "screen", weights=12.0, compile=54.0, cuda_graphs=24.0),
    row(120.0, "screen", weights=14.0, compile=56.0, cuda_graphs=23.0),
]


def test_medians_per_fidelity_with_the_rest() -> None:
    costs = load_costs([*FULL, *SCREEN, row(None, "full"), row(None, "screen")])
    assert costs.full is not None and costs.screen is not None
    assert (costs.full.launches, costs.full.with_phases) == (3, 3)
    assert costs.full.healthy_s == 2160.0
    assert costs.full.phases == {
        "weights": 2046.0,
        "compile": 54.0,
        "cuda_graphs": 24.0,
        "rest": pytest.approx(36.0),  # 36, 36 and 20 s beyond the phases
    }
    assert costs.screen.launches == 2 and costs.screen.healthy_s == 117.0
    assert costs.screening_saves == pytest.approx(1 - 117 / 2160)
    assert [c.fidelity for c in costs.measured] == ["full", "screen"]
    assert costs.to_json()["screening_saves"] == pytest.approx(0.9458, abs=1e-4)


def test_the_sentence_says_what_a_load_costs_and_what_screening_saves() -> None:
    text = load_costs_sentence(load_costs([*FULL, *SCREEN]))
    assert text == (
        "full load 36.0 min (weights 34.1, torch.compile 0.9, CUDA graphs 0.4, the rest 0.6); "
        "screening 1.9 min: screening saves 95% of a load"
    )


def test_seconds_for_short_loads_and_a_screening_that_saves_nothing() -> None:
    costs = load_costs(
        [row(58.6, "full", weights=0.1, compile=24.0), row(80.7, "screen", weights=0.1)]
    )
    assert load_costs_sentence(costs) == (
        "full load 58.6 s (weights 0.1, torch.compile 24.0, the rest 34.5); screening 80.7 s: "
        "screening saves no time here (its load takes 38% longer)"
    )


def test_launches_without_phases_count_for_the_time_to_healthy_only() -> None:
    costs = load_costs([row(60.0), row(70.0, weights=30.0), row(80.0, "full")])
    assert costs.full is not None
    assert (costs.full.launches, costs.full.with_phases) == (3, 1)
    assert costs.full.healthy_s == 70.0
    assert costs.full.phases == {"weights": 30.0, "rest": 40.0}
    assert costs.screen is None and costs.screening_saves is None
    assert load_costs_sentence(costs) == "full load 70.0 s (weights 30.0, the rest 40.0)"


def test_a_phase_one_launch_did_not_print_counts_zero_there() -> None:
    costs = load_costs([row(50.0, weights=10.0, compile=30.0), row(20.0, weights=10.0)])
    assert costs.full is not None
    assert costs.full.phases["compile"] == 15.0  # median of 30 and 0 (-O0, say)


def test_nothing_healthy_gives_nothing_to_say() -> None:
    assert load_costs([]) == LoadCosts()
    assert load_costs_sentence(load_costs([row(None)])) is None
    only_screen = load_costs([row(100.0, "screen")])
    assert load_costs_sentence(only_screen) == ("screening load 100.0 s; no full load measured yet")
