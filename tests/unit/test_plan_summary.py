"""The cost plan as the sweep prints it: five plain lines from the plan's own figures."""

from __future__ import annotations

import dataclasses
import io

import pytest
from rich.console import Console

from tests.unit.test_study_plan import SPACE, load_space_dict, noise_of
from tuner.stats.wording import percent
from tuner.study.facts.launch_times import LaunchTimes
from tuner.study.facts.plan import CostPlan, cost_plan
from tuner.study.facts.plan_levers import Lever, pct_text
from tuner.views.console import MessageObserver
from tuner.views.plan_text import plan_lines, plan_summary

JARGON = ("power", "shrunk", "prior", "interval", "confidence", "dof", "99.")


def _plan(
    between: float = 0.03,
    within: float = 0.05,
    *,
    budget: int | None = 20,
    times: LaunchTimes | None = None,
    launches: int = 2,
) -> CostPlan:
    return cost_plan(
        load_space_dict(SPACE).spec,
        noise_of(between, within, launches=launches),
        times if times is not None else LaunchTimes(2, 1200.0, 600.0),
        baseline_measured=launches,
        budget=budget,
    )


def test_a_noisy_machine_gets_five_plain_lines_with_the_plan_s_figures() -> None:
    plan = _plan()
    lines = plan_summary(plan)
    text = "\n".join(lines)
    assert len(lines) <= 5
    # The noise between launches and where it comes from.
    assert f"launches vary by ±{percent(plan.noise.rel_sd)} (2 launches of the defaults)" in text
    # The smallest gain the study can confirm: the full plan's "cannot confirm below".
    assert f"smallest gain this study can confirm: {pct_text(plan.confirmable_at_most)}" in text
    assert f"this study cannot confirm gains below {pct_text(plan.confirmable_at_most)}" in (
        "\n".join(plan_lines(plan))
    )
    # Launches and hours to an answer (30 min a launch), and --trials against them.
    quickest, typical = plan.quickest, plan.typical
    assert quickest < 20 < typical
    assert (
        f"to an answer: {quickest} launches ({quickest / 2:.1f} h) to keep the defaults, "
        f"about {typical} ({typical / 2:.1f} h) with a gain"
    ) in text
    assert f"--trials 20 holds them only without a gain: use --trials {typical}" in text
    # The lever that lowers the search's smallest gain the most, with its figure.
    best = min((lever for lever in plan.levers if lever.gain is not None), key=_gain)
    assert best.gain is not None and best.gain < 0.95 * plan.now.gain
    assert (
        f"helps most: {best.change} (the search would see {pct_text(best.gain)} gains, "
        f"not {pct_text(plan.now.gain)})"
    ) in text
    assert "tuner check --plan" in lines[0]  # where the whole arithmetic is
    for word in JARGON:
        assert word not in text, word


@pytest.mark.parametrize(
    ("budget", "said"),
    [(40, "--trials 40 holds them"), (3, "--trials 3 holds neither: use --trials "), (None, "")],
)
def test_trials_are_held_against_the_launches_to_an_answer(budget: int | None, said: str) -> None:
    plan = _plan(0.005, 0.005, budget=budget)
    line = plan_summary(plan)[3]
    assert line.strip().startswith(said or f"--trials {plan.typical} holds them"), line
    if budget == 3:
        assert line.endswith(f"--trials {plan.typical}")


def test_an_assumed_noise_and_an_untimed_launch_are_said_so() -> None:
    plan = _plan(0.01, 0.01, launches=1, times=LaunchTimes(0, None, None))
    text = "\n".join(plan_summary(plan))
    assert "(assumed: none repeated yet)" in text
    assert f"about {plan.typical} with a gain (not timed yet)" in text
    assert " h)" not in text


def test_when_no_figured_change_helps_the_one_without_a_figure_is_named() -> None:
    plan = _plan()
    flat = tuple(
        dataclasses.replace(lever, gain=plan.now.gain) if lever.gain is not None else lever
        for lever in plan.levers
    )
    line = plan_summary(dataclasses.replace(plan, levers=flat))[4]
    assert line == "  may help: server.cpus, benchmark.cpus (no figure for it)"
    none = (Lever("benchmark.rounds: 6", "hardly moves it", plan.now.gain),)
    line = plan_summary(dataclasses.replace(plan, levers=none))[4]
    assert line == "  no change listed lowers the smallest gain much"


@pytest.mark.parametrize("between", [0.002, 0.03, 0.2])
def test_printed_at_100_columns_it_stays_five_lines(between: float) -> None:
    # What the sweep prints (MessageObserver.cost_plan, ConsoleObserver's too) at the
    # narrowest width people run it: no line wraps into two.
    out = io.StringIO()
    plan = _plan(between, 0.05, budget=7, times=LaunchTimes(2, 36_000.0, 7_200.0))
    MessageObserver(Console(file=out, width=100)).cost_plan(plan)
    printed = out.getvalue().splitlines()
    assert len(printed) == 5, printed
    assert printed[0].startswith("• cost plan")


def _gain(lever: Lever) -> float:
    assert lever.gain is not None
    return lever.gain
