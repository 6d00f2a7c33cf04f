"""What a load costs per fidelity, and the sentence that says what screening saves."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tuner.launcher.load_phases import LoadPhases
from tuner.storage import LaunchRow
from tuner.study.facts.launch_times import LaunchTimes
from tuner.study.facts.load_costs import (
    CompileReuse,
    LoadCosts,
    compile_reuse,
    load_costs,
    load_costs_sentence,
)
from tuner.study.facts.plan_launches import ScreeningPlan


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


# Issue 41, point 4: one compile cache per configuration, shared by both fidelities.
T0 = dt.datetime(2026, 12, 6, 20, 0, tzinfo=dt.timezone.utc)


def launch(
    config: str,
    start_s: float,
    healthy: float | None,
    fidelity: str,
    compile: float,
    env: dict[str, str] | None = None,
) -> LaunchRow:
    stored = LoadPhases(compile_s=compile, healthy_s=healthy).to_json()
    return LaunchRow(
        config_hash=config,
        started_at=T0 + dt.timedelta(seconds=start_s),
        fidelity=fidelity,
        seconds_to_healthy=healthy,
        load_phases=stored if healthy is not None else None,
        # The space's fixed env, as a launch stores it: the same cache root at both fidelities.
        env={"VLLM_CACHE_ROOT": f"/s/vllm-cache/{config}", **(env or {})},
    )


# The CPU build's figures (docs/measurements/screening.md, 2026-12-06, night): a cold
# compile of about 22 s, 7 s once a launch of the configuration at either fidelity wrote it.
STUDY = [
    launch("defaults", 0, 60.0, "screen", 22.0),  # first: compiles
    launch("defaults", 100, 40.0, "screen", 7.0),  # again
    launch("defaults", 200, 45.0, "full", 7.0),  # a full launch after screening: again
    launch("b", 300, 60.0, "screen", 23.0),  # a new configuration: first
    launch("c", 400, None, "screen", 0.0),  # never healthy: warms nothing
    launch("c", 500, 61.0, "screen", 21.0),  # so this one is c's first
    # Started before b's first launch was healthy: no cache yet, it compiles too.
    launch("b", 330, 75.0, "full", 22.0),
]


def test_a_full_launch_after_a_screening_one_of_its_configuration_compiles_from_the_cache():
    reuse = compile_reuse(STUDY)
    assert (reuse.first_s, reuse.again_s) == (22.0, 7.0)  # medians of 22, 23, 21, 22 and 7, 7
    assert reuse.saved_s == 15.0
    assert reuse.first_share_full == 0.5  # b's full launch was a first one, the defaults' not
    assert reuse.first_share_screen == pytest.approx(3 / 4)
    assert reuse.screening_parts is False
    # Rows without a configuration or a start time (older stores) say nothing.
    assert compile_reuse(FULL + SCREEN) == CompileReuse()
    text = load_costs_sentence(load_costs(STUDY))
    assert text is not None and text.endswith(
        "; torch.compile 22.0 s on a configuration's first launch, 7.0 on its later ones at "
        "either fidelity (one compile cache)"
    ), text


def test_a_compile_that_only_jitters_saves_nothing():
    # The simulator's warm cache: the same compile every launch, timed to the millisecond.
    rows = [launch("a", 0, 30.0, "screen", 2.104), launch("a", 60, 30.0, "full", 2.093)]
    reuse = compile_reuse(rows)
    assert reuse.saved_s == 0.0
    assert "first launch" not in (load_costs_sentence(load_costs(rows)) or "")


def screening_plan(compile: CompileReuse) -> ScreeningPlan:
    return ScreeningPlan(
        full=LaunchTimes(2, 2000.0, 400.0),  # 2400 s a full launch, as measured
        screen=LaunchTimes(2, 100.0, 200.0),  # 300 s a screening launch, as measured
        keep_defaults=(10, 1),
        one_gain=(14, 7),
        without=(10, 17),
        max_launches=20,
        firsts=(9, 12),
        firsts_without=(9, 12),
        compile=compile,
    )


def test_the_plan_charges_the_compile_to_first_launches_only():
    # Half the screening launches measured were first ones, no full one was.
    reuse = CompileReuse(first_s=60.0, again_s=10.0, first_share_full=0.0, first_share_screen=0.5)
    plan = screening_plan(reuse)
    assert plan.again_s("full") == 2400.0  # the full baselines read the screening one's cache
    assert plan.again_s("screen") == 275.0  # 300 less half of the 50 s a cache saves
    # 14 screening launches and 7 full ones at their warm cost, 12 configurations compiled.
    assert plan.hours(plan.one_gain, plan.firsts[1]) == pytest.approx(
        (14 * 275.0 + 7 * 2400.0 + 12 * 50.0) / 3600
    )
    assert plan.hours_without(17, 12) == pytest.approx((17 * 2400.0 + 12 * 50.0) / 3600)
    assert plan.gain_hours == plan.hours(plan.one_gain, 12)
    assert plan.gain_hours_without == plan.hours_without(17, 12)
    doc = plan.to_json()
    assert doc["compile"]["saved_s"] == 50.0 and doc["first_launches"]["one_gain"] == 12
    assert doc["hours"]["one_gain"] == plan.gain_hours
    # Without a measured saving the hours are the measured means, as before.
    plain = screening_plan(CompileReuse(first_s=60.0))
    assert plain.hours(plain.one_gain, 12) == pytest.approx((14 * 300.0 + 7 * 2400.0) / 3600)


def test_a_vllm_variable_only_screening_sets_keys_the_full_launch_apart():
    # VLLM_MOE_ROUTING_SIMULATION_STRATEGY is in vLLM's key (envs.compile_factors): the full
    # launch after the screening ones finds no cache of its own and compiles.
    routing = {"VLLM_MOE_ROUTING_SIMULATION_STRATEGY": "uniform_random"}
    rows = [
        launch("defaults", 0, 60.0, "screen", 22.0, routing),
        launch("defaults", 100, 40.0, "screen", 7.0, routing),
        launch("defaults", 200, 60.0, "full", 23.0),
        launch("defaults", 300, 45.0, "full", 8.0),
    ]
    reuse = compile_reuse(rows)
    assert (reuse.first_s, reuse.again_s, reuse.first_share_full) == (22.5, 7.5, 0.5)
    assert reuse.screening_parts is True
    plan = screening_plan(reuse)
    # The defaults and the gain compile once more at full fidelity: 12 + 2 first launches.
    assert plan.gain_hours == plan.hours(plan.one_gain, 14)
    assert plan.keep_hours == plan.hours(plan.keep_defaults, 10)
