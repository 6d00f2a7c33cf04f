"""The cost plan on fake studies: said once after the baseline, with the study's own figures."""

from __future__ import annotations

import dataclasses
import io
import math
import random
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from rich.console import Console

from tests.fakes import FakeRunner, RecordingObserver
from tests.unit.stats.helpers import simulate_launch
from tests.unit.test_sweep_decisions import SPACE
from tuner.report.data import build_report
from tuner.report.html import render
from tuner.space.spec import Space, load_space, parse_space
from tuner.stats import NoiseEstimate, between_launch_variance
from tuner.stats.power import detectable_gain
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.facts import analysis
from tuner.study.facts.launch_times import LaunchTimes, launch_times
from tuner.study.facts.plan import CostPlan, cost_plan
from tuner.study.policy import futility
from tuner.study.run.plan_launch import said_plan
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.views.console import ConsoleObserver
from tuner.views.console_live import LiveView
from tuner.views.plan_text import plan_lines


def _study(
    tmp_path: Path, *, trials: int, stop: dict[str, Any] | None = None, **runner: Any
) -> tuple[optuna.Study, RecordingObserver, str]:
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump({**SPACE, "stop": {**SPACE["stop"], **(stop or {})}}))
    storage = f"sqlite:///{tmp_path}/d.db"
    observer = RecordingObserver()
    fake = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seconds=(1500.0, 300.0), **runner)
    run_sweep(
        load_space(path), RunRequest(storage, trials, seed=0), Seams(observer=observer, runner=fake)
    )
    return optuna.load_study(study_name="d", storage=storage), observer, storage


def _plans(observer: RecordingObserver) -> list[CostPlan]:
    return [e[1] for e in observer.events if e[0] == "cost_plan"]


def test_the_plan_is_said_once_after_the_baseline_with_the_study_s_figures(tmp_path: Path) -> None:
    study, observer, storage = _study(tmp_path, trials=4)
    [said] = _plans(observer)
    plans = ["\n".join(plan_lines(said))]  # what the console prints
    assert plans[0].startswith("cost plan after 2 baseline launches:")
    recorded = study.user_attrs[attrs.PLAN]
    assert recorded == said.to_json()  # the figures of the plan that was said
    assert "text" not in recorded  # the sentences are the views', said from the figures

    # Its noise is the analysis's after the two baseline launches (FakeRunner: 0.5% each).
    space = load_space(tmp_path / "d.yaml")
    rows = Store(storage).launches("d")[:2]
    assert [r.role for r in rows] == ["baseline", "baseline"]
    noise = recorded["noise"]
    assert noise["n_launches"] == 2 and noise["n_configs"] == 1
    assert 0.001 < math.sqrt(noise["within_var"]) < 0.012
    # The smallest confirmable gain is compare's threshold at 2 + 2 launches (with the
    # candidate's repeat counted in the noise's dof), above the 1% min_gain here.
    assert analysis.analyze(Store(storage), space).noise is not None
    assert recorded["detectable_gain"] > recorded["detectable_gain_settled"] > 0
    assert recorded["cannot_confirm_below_min_gain"] is (recorded["detectable_gain"] > 0.01)
    # The answer's own figure: the final comparison's interval must clear min_gain.
    final = recorded["final"]
    assert final["launches_each"] == 2 and final["launches_each_max"] == 6
    assert final["confidence"] == 0.9975  # the first look at a quarter of 1%
    # The comparison sized to the noise: the launches a side the budget keeps.
    sizing = recorded["sizing"]
    assert 2 <= sizing["launches_each"] <= 6 and sizing["power"] == 0.8
    assert (
        sizing["target_gain"] >= 0.02
        and sizing["trials_needed"] == 2 + 6 + 2 * sizing["launches_each"]
    )
    sized = 2 * sizing["launches_each"]
    # Said in one line before the search, with the --trials that would hold it (budget 4).
    assert "final comparison: at ±" in plans[0]
    assert (
        f"--trials 4 cannot hold it beside a search; --trials {sizing['trials_needed']} would"
        in plans[0]
    )
    assert final["confirmable"] > 0.01 + final["mde"]["threshold"] * 0.99
    assert final["confirmed_four_in_five"] > final["confirmable"]
    # With up to 6 launches a side at its sized look, smaller gains can be confirmed.
    assert 0.01 < final["cannot_confirm_below"] < final["confirmable"]
    assert f"this study cannot confirm gains below {final['cannot_confirm_below']:.1%}" in plans[0]
    assert f"{final['cannot_confirm_below']:.1%} at 6 a side" in plans[0]
    # Launches: 2 baseline + patience 6 to keep the defaults; one gain adds its search
    # trials (9 values, 3 a launch: ~2), a confirmation, the simpler form's 2 launches and
    # the final comparison's 4.
    launches = recorded["launches"]
    assert launches["keep_defaults"] == 2 + 6
    assert launches["one_gain"] == 2 + 2 + 1 + 6 + 2 + sized
    assert launches["one_gain_futile"] == 2 + 2 + 1 + min(6, futility.MIN_TRIALS) + 2 + sized
    assert launches["budget"] == 4
    # Hours from the launches' timings: 25 min to healthy + 5 min benchmark, 30 min each.
    assert recorded["seconds"]["to_healthy"] == pytest.approx(1500.0)
    assert recorded["seconds"]["benchmark_and_stop"] == pytest.approx(300.0, abs=1.0)
    assert recorded["hours"]["keep_defaults"] == pytest.approx(8 * 0.5, rel=0.01)
    one_gain = (2 + 2 + 1 + 6 + 2 + sized) * 0.5
    assert recorded["hours"]["one_gain"] == pytest.approx(one_gain, rel=0.01)
    assert f"4.0 h to {one_gain:.1f} h" in plans[0]


def test_the_sweep_prints_the_summary_after_the_baseline_not_the_arithmetic(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(SPACE))
    storage = f"sqlite:///{tmp_path}/d.db"
    out = io.StringIO()
    fake = FakeRunner(Store(storage), "d", speed=lambda p: 100.0, seconds=(1500.0, 300.0))
    observer = ConsoleObserver(Console(file=out, width=100), LiveView("d", 4))
    run_sweep(
        load_space(path), RunRequest(storage, 4, seed=0), Seams(observer=observer, runner=fake)
    )
    printed = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(printed) if line.startswith("• cost plan"))
    # Between the trial lines, after the baseline's two: five lines, then the next notice
    # or trial line.
    assert sum(1 for line in printed[:start] if line.startswith("trial ")) == 2
    block = printed[start : start + 5]
    assert "launches vary by ±" in block[0] and "tuner check --plan" in block[0]
    assert block[1].startswith("  smallest gain this study can confirm: ")
    assert block[2].startswith("  to an answer: 8 launches (4.0 h) to keep the defaults")
    assert block[3].startswith("  --trials 4 holds neither: use --trials ")
    assert block[4].startswith(("  helps most: ", "  may help: "))
    assert printed[start + 5].startswith("trial   2 search"), printed[start + 5]
    said = out.getvalue()
    for arithmetic in ("what would lower them", "power 50%", "shrunk towards", "% interval"):
        assert arithmetic not in said


def test_the_report_carries_the_whole_plan_the_sweep_said(tmp_path: Path) -> None:
    study, observer, storage = _study(tmp_path, trials=4)
    [said] = _plans(observer)
    # Worked out again from the baseline launches and the recorded --trials: the same plan.
    space = load_space(tmp_path / "d.yaml")
    again = said_plan(
        Store(storage), space, Store(storage).launches("d"), study.user_attrs[attrs.PLAN]
    )
    assert again is not None and again.to_json() == said.to_json()
    data = build_report(storage, "d")
    assert list(data.plan) == plan_lines(said)
    page = render(data)
    assert '<section id="plan">' in page and "what would lower them:" in page
    assert "--trials 4 cannot hold it beside a search" in page
    # A study that has not said its plan has no plan to show, and says why.
    assert said_plan(Store(storage), space, [], None) is None


def test_the_plan_is_not_repeated_when_the_study_resumes(tmp_path: Path) -> None:
    _study(tmp_path, trials=3)
    _, observer, _ = _study(tmp_path, trials=5)
    assert not _plans(observer)


def test_the_minimum_is_compare_s_own_at_the_study_s_launch_counts() -> None:
    space = load_space_dict({**SPACE, "stop": {**SPACE["stop"], "confirmations": 2}})
    noise = noise_of(between=0.01, within=0.01)
    plan = cost_plan(space.spec, noise, LaunchTimes(0, None, None), baseline_measured=2)
    direct = detectable_gain(
        dataclasses.replace(noise, dof=noise.dof + 2),  # the candidate's two repeats
        rounds=3,
        candidate_launches=3,
        baseline_launches=2,
        confidence=0.95,
    )
    assert plan.now.gain == pytest.approx(direct.gain, rel=1e-9)
    assert plan.candidate_launches == 3 and plan.baseline_launches == 2
    assert "time: unknown" in "\n".join(plan_lines(plan))


def test_a_quiet_machine_with_a_large_min_gain_confirms_just_above_it(tmp_path: Path) -> None:
    space = load_space_dict({**SPACE, "stop": {**SPACE["stop"], "min_gain": 0.2}})
    plan = cost_plan(
        space.spec, noise_of(0.002, 0.002), LaunchTimes(2, 60.0, 30.0), baseline_measured=2
    )
    text = "\n".join(plan_lines(plan))
    assert plan.now.gain < 0.2
    # The final interval must clear 20%: a gain a little above it (the prior's 1% restart
    # noise, 2 launches a side) is what it can confirm, said as such.
    assert 0.2 < plan.confirmable_at_most < plan.confirmable < 0.24
    assert f"this study cannot confirm gains below {plan.confirmable_at_most:.1%}" in text


def test_a_noisy_machine_is_told_plainly_and_shown_what_would_help() -> None:
    plan = cost_plan(
        load_space_dict(SPACE).spec,
        noise_of(0.03, 0.05),
        LaunchTimes(2, 1200.0, 600.0),
        baseline_measured=2,
    )
    text = "\n".join(plan_lines(plan))
    assert f"this study cannot confirm gains below {plan.confirmable_at_most:.1%}" in text
    assert f"takes a gain of {plan.confirmable:.1%} (half the time" in text
    assert "min_gain (1.0%)" in text
    levers = {lever.change: lever for lever in plan.levers}
    assert levers["stop.confirmations: 2"].gain is not None
    assert levers["stop.confirmations: 2"].gain < plan.now.gain
    assert levers["benchmark.rounds: 6"].gain is not None
    assert levers["benchmark.rounds: 6"].gain < plan.now.gain
    assert "server.cpus, benchmark.cpus" in levers


def test_a_single_baseline_launch_says_the_between_part_is_assumed() -> None:
    plan = cost_plan(
        load_space_dict(SPACE).spec,
        noise_of(0.01, 0.01, launches=1),
        LaunchTimes(1, 30.0, 10.0),
        baseline_measured=1,
    )
    text = "\n".join(plan_lines(plan))
    assert text.startswith("cost plan after 1 baseline launch:")
    assert "assumed until two exist" in text
    assert plan.to_json()["between_assumed"] is True


def test_launch_times_skip_failed_and_untimed_launches(tmp_path: Path) -> None:
    _, _, storage = _study(tmp_path, trials=2)
    rows = Store(storage).launches("d")
    times = launch_times(rows)
    assert times.launches == 2 and times.per_launch_s == pytest.approx(1800.0, abs=1.0)
    assert launch_times([]).per_launch_s is None


# --- helpers ------------------------------------------------------------------------------


def load_space_dict(data: dict[str, Any]) -> Space:
    return parse_space(data, Path("plan.yaml"))


def noise_of(between: float, within: float, launches: int = 2) -> NoiseEstimate:
    rng = random.Random(3)
    noise = between_launch_variance(
        [[simulate_launch(rng, 100.0, between, within) for _ in range(launches)]]
    )
    assert noise is not None
    return noise
