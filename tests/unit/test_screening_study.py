"""Screening launches in a study (issue 24): they search, full launches decide.

A FakeRunner draws each launch at its fidelity: ``screen_speed`` for a screening launch
(random weights), ``speed`` for a full one. No process is started.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes import FakeRunner
from tests.unit.test_sweep_decisions import SPACE
from tuner.errors import ConfigError
from tuner.events import SweepObserver
from tuner.space.spec import load_space, parse_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.facts.fidelity import rank_agreement
from tuner.study.policy.screening import fidelity
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report

SPEC_DRAFTS = {
    "args": ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": {value}}'],
    "choices": ["default", 3],
}
SCREENED = {
    **SPACE,
    "params": {**SPACE["params"], "drafts": SPEC_DRAFTS},
    "stop": {**SPACE["stop"], "patience": 4},
    "screening": {"args": ["--load-format", "dummy"], "max_launches": 30},
}


def _sweep(
    tmp_path: Path,
    speed: Any,
    screen_speed: Any = None,
    *,
    space: dict[str, Any] | None = None,
    trials: int = 12,
    **kw: Any,
) -> tuple[Any, FakeRunner, str]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(space or SCREENED))
    storage = f"sqlite:///{tmp_path}/s.db"
    runner = FakeRunner(
        Store(storage),
        "d",
        speed=speed,
        screen_speed=screen_speed,
        seed=1,
        seconds=(1800.0, 200.0),
        screen_seconds=(60.0, 200.0),
    )
    kw.setdefault("seed", 0)
    seams = Seams(kw.pop("observer", None) or SweepObserver(), runner=runner)
    result = run_sweep(load_space(path), RunRequest(storage, trials, **kw), seams)
    return result, runner, storage


def _launches(runner: FakeRunner) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (role, fid, changed)
        for (role, changed), fid in zip(runner.launched, runner.fidelities, strict=True)
    ]


def test_the_rule_full_without_screening_for_final_launches_and_unscreenable_settings() -> None:
    plain = parse_space(SPACE, Path("p.yaml")).spec
    screened = parse_space(SCREENED, Path("s.yaml")).spec
    defaults = {name: "default" for name in screened.params}
    assert fidelity(plain, attrs.SEARCH, defaults) == attrs.FULL
    assert fidelity(screened, attrs.SEARCH, defaults) == attrs.SCREEN
    assert fidelity(screened, attrs.FINAL, defaults) == attrs.FULL
    assert fidelity(screened, attrs.BASELINE, defaults, attrs.FULL) == attrs.FULL
    assert fidelity(screened, attrs.SEARCH, {**defaults, "drafts": 3}) == attrs.FULL
    assert fidelity(screened, attrs.CONFIRM, {**defaults, "drafts": 3}) == attrs.FULL


def test_a_flat_study_opens_at_both_fidelities_searches_on_screening_and_keeps_the_defaults(
    tmp_path: Path,
) -> None:
    result, runner, storage = _sweep(tmp_path, lambda p: 100.0, lambda p: 101.0)
    launches = _launches(runner)
    assert [(r, f) for r, f, _ in launches[:3]] == [
        ("baseline", "screen"),
        ("baseline", "screen"),
        ("baseline", "full"),
    ]
    searched = [(f, c) for r, f, c in launches if r == "search"]
    assert searched and all(f == "screen" or "drafts" in c for f, c in searched)
    full = [f for _, f, _ in launches if f == "full"]
    # Full loads: the full baseline, the few settings screening cannot judge, and the final
    # comparison of the best-looking change (3 a side at most with screening).
    full_search = sum(1 for f, _ in searched if f == "full")
    assert len(full) <= 1 + full_search + 2 * 3
    assert full_search < len(searched) / 2
    report = best_report(storage, "d")
    assert report.keep_defaults is True
    doc = report.to_json()["screening"]
    assert doc["full_launches"] == len(full)
    bias = doc["bias"]  # full 100 against screening 101: about -1%
    assert bias is not None and -0.02 < bias["rel_diff"] < 0.0
    assert report.screening is not None
    assert any(line.startswith("Screening bias:") for line in report.screening.lines())


def test_a_gain_seen_only_on_screening_launches_is_never_the_answer(tmp_path: Path) -> None:
    # -O3 looks 10% faster on random weights and does nothing on the real model: the final
    # comparison's full launches refute it.
    def screen(p: dict[str, Any]) -> float:
        return 110.0 if str(p.get("compilation")) == "3" else 100.0

    result, runner, storage = _sweep(tmp_path, lambda p: 100.0, screen)
    finals = [(f, c) for r, f, c in _launches(runner) if r == "final"]
    assert finals and all(f == "full" for f, _ in finals)
    assert any(str(c.get("compilation")) == "3" for _, c in finals)
    report = best_report(storage, "d")
    assert report.keep_defaults is True
    assert report.final is not None and report.final.to_json()["passed"] is False


def test_a_real_gain_is_confirmed_on_full_launches_and_its_interval_is_theirs(
    tmp_path: Path,
) -> None:
    def speed(p: dict[str, Any]) -> float:
        return 110.0 if p.get("NCCL_PROTO") == "LL128" else 100.0

    result, runner, storage = _sweep(tmp_path, speed, lambda p: speed(p) * 1.01, trials=12)
    report = best_report(storage, "d")
    assert report.keep_defaults is False
    assert report.recommended is not None
    assert report.recommended.params["NCCL_PROTO"] == "LL128"
    gain = report.gain_vs_baseline
    assert (
        gain is not None and gain.ci_low > 0.05 and gain.rel_diff == pytest.approx(0.10, abs=0.03)
    )
    full = sum(1 for f in runner.fidelities if f == "full")
    assert full <= 8  # one full baseline and the final comparison's four


def test_speculative_decoding_is_judged_on_full_launches_only(tmp_path: Path) -> None:
    # Drafts are accepted on real weights (+15%) and never on random ones (-10%): screened,
    # the gain would look like a loss. tuner launches it at full fidelity only.
    def speed(p: dict[str, Any]) -> float:
        return 115.0 if str(p.get("drafts")) == "3" else 100.0

    def screen(p: dict[str, Any]) -> float:
        return 90.0 if str(p.get("drafts")) == "3" else 100.0

    result, runner, storage = _sweep(tmp_path, speed, screen, trials=14)
    launches = _launches(runner)
    drafted = [(r, f) for r, f, c in launches if str(c.get("drafts")) == "3"]
    assert drafted and all(f == "full" for _, f in drafted)
    report = best_report(storage, "d")
    assert report.recommended is not None and str(report.recommended.params["drafts"]) == "3"
    assert report.keep_defaults is False


def test_trials_counts_full_loads_and_screening_has_its_own_cap(tmp_path: Path) -> None:
    space = {**SCREENED, "screening": {**SCREENED["screening"], "max_launches": 6}}
    space["stop"] = {**space["stop"], "patience": 20}
    result, runner, _ = _sweep(tmp_path, lambda p: 100.0, space=space, trials=3)
    assert result.stop_reason == attrs.BUDGET
    assert "screening budget of 6" in result.stop_detail
    assert sum(1 for f in runner.fidelities if f == "screen") == 6
    assert len(runner.fidelities) > 3  # more launches than --trials: only full loads count


def test_screening_max_launches_is_a_cap_even_for_a_confirmation(tmp_path: Path) -> None:
    # Three real gains: the search's last screening launch often looks better than the best,
    # and its confirmation would be one launch past the cap (8 of 48 such studies before, 3
    # of these 6).
    def speed(p: dict[str, Any]) -> float:
        gains = (p["NCCL_PROTO"] == "LL", str(p["compilation"]) == "3", str(p["MIN"]) == "4")
        return 100.0 * 1.04 ** gains[0] * 1.03 ** gains[1] * 1.02 ** gains[2]

    over = []
    for cap in (5, 7, 8):
        for seed in (0, 2):
            space = {
                **SCREENED,
                "screening": {**SCREENED["screening"], "max_launches": cap},
                "stop": {**SCREENED["stop"], "patience": 30},
            }
            folder = tmp_path / f"{cap}-{seed}"
            folder.mkdir()
            _, runner, _ = _sweep(folder, speed, space=space, trials=12, seed=seed)
            screened = sum(1 for f in runner.fidelities if f == "screen")
            if screened > cap:
                over.append((cap, seed, screened))
    assert over == []


def test_hours_stop_the_search_before_its_costs_would_pass_them(tmp_path: Path) -> None:
    space = {**SCREENED, "stop": {**SCREENED["stop"], "patience": 30}}
    # full: 2000 s a launch, screening 260 s; 2.6 h leave room for 3 screening launches
    # after the opening's 2 screening + 1 full, with 4 full launches kept for the final.
    result, runner, _ = _sweep(tmp_path, lambda p: 100.0, space=space, trials=20, hours=3.4)
    assert result.stop_reason == attrs.BUDGET and "--hours" in result.stop_detail
    spent = sum(2000.0 if f == "full" else 260.0 for f in runner.fidelities)
    assert spent <= 3.4 * 3600


def test_rank_agreement_counts_the_pairs_screening_orders_as_full_launches() -> None:
    both = [("a", 100.0, 90.0), ("b", 105.0, 95.0), ("c", 103.0, 99.0)]
    found = rank_agreement(both)
    assert (found.configs, found.pairs, found.concordant) == (3, 3, 2)
    assert "2 of 3 pairs" in found.sentence()


def test_screening_is_refused_with_several_objectives_or_limits() -> None:
    several = {
        **SCREENED,
        "objectives": [{"metric": "output_throughput"}, {"metric": "ttft_ms_p99"}],
    }
    with pytest.raises(ConfigError, match="screening: is not supported with several"):
        parse_space(several, Path("s.yaml"))
    limits = {**SCREENED, "objective": {"subject_to": ["ttft_ms.p99 <= 100"]}}
    with pytest.raises(ConfigError, match="subject_to"):
        parse_space(limits, Path("s.yaml"))
    forced = {**SCREENED, "params": {"drafts": {**SPEC_DRAFTS, "screen": True}}}
    with pytest.raises(ConfigError, match="acts through the weights"):
        parse_space(forced, Path("s.yaml"))


def test_screening_launches_run_screening_benchmark_s_rounds_and_requests() -> None:
    shorter = {
        **SCREENED,
        "benchmark": {"concurrency": [1, 8], "requests": 8, "rounds": 3},
        "screening": {**SCREENED["screening"], "benchmark": {"rounds": 1, "requests": 4}},
    }
    spec = parse_space(shorter, Path("s.yaml")).spec
    screen, full = spec.benchmark_for("screen"), spec.benchmark_for("full")
    assert (screen.rounds, screen.requests, screen.concurrency) == (1, 4, [1, 8])
    assert full is spec.benchmark and (full.rounds, full.requests) == (3, 8)
    # Without the override, or without screening, every launch runs the benchmark.
    assert parse_space(SCREENED, Path("s.yaml")).spec.benchmark_for("screen").rounds == 3
    assert parse_space(SPACE, Path("p.yaml")).spec.benchmark_for("screen").rounds == 3
    # Only rounds and requests: the levels and the load are the answer's, kept alike.
    levels = {**shorter, "screening": {**SCREENED["screening"], "benchmark": {"concurrency": 4}}}
    with pytest.raises(ConfigError, match=r"screening\.benchmark\.concurrency"):
        parse_space(levels, Path("s.yaml"))
    zero = {**shorter, "screening": {**SCREENED["screening"], "benchmark": {"rounds": 0}}}
    with pytest.raises(ConfigError, match=r"screening\.benchmark\.rounds"):
        parse_space(zero, Path("s.yaml"))


def test_a_screening_launch_with_fewer_rounds_searches_and_full_launches_keep_theirs(
    tmp_path: Path,
) -> None:
    space = {**SCREENED, "screening": {**SCREENED["screening"], "benchmark": {"rounds": 1}}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(space))
    storage = f"sqlite:///{tmp_path}/s.db"
    runner = FakeRunner(
        Store(storage), "d", speed=lambda p: 100.0, seed=1, screen_rounds=1
    )  # what the runner does with screening.benchmark (tests/integration: the real one)
    result = run_sweep(load_space(path), RunRequest(storage, 12, seed=0), Seams(runner=runner))
    assert result.stop_reason in ("plateau", "futile")
    rows = Store(storage).launches("d")
    screen = [r for r in rows if r.fidelity == "screen"]
    full = [r for r in rows if r.fidelity == "full"]
    assert len(screen) >= 4 and full
    assert all(len(r.objective_rounds or []) == 1 for r in screen)
    assert all(len(r.objective_rounds or []) == 3 for r in full)
    assert best_report(storage, "d").keep_defaults


def test_the_screening_patience_is_twice_the_stop_s_by_default() -> None:
    spec = parse_space(SCREENED, Path("s.yaml")).spec
    assert spec.search_patience == 8
    plain = parse_space(SPACE, Path("p.yaml")).spec
    assert plain.search_patience == 6


def test_the_report_marks_screening_launches_and_says_the_answer_rests_on_full_ones(
    tmp_path: Path,
) -> None:
    from tuner.report.data import build_report
    from tuner.report.html import render

    _, runner, storage = _sweep(tmp_path, lambda p: 100.0, lambda p: 101.0)
    data = build_report(storage, "d")
    assert "rests on full launches only" in data.verdict
    screened = [p for p in data.history if p.fidelity == "screen"]
    assert len(screened) == sum(1 for f in runner.fidelities if f == "screen")
    page = render(data)
    assert 'id="screening"' in page and "small marks: screening launches" in page
    assert "Screening bias:" in page


def test_the_cost_plan_says_both_kinds_of_launch_and_the_hours_without_screening(
    tmp_path: Path,
) -> None:
    from tests.fakes import RecordingObserver
    from tuner.report.data import build_report
    from tuner.views.plan_text import plan_lines, plan_summary

    observer = RecordingObserver()
    _, _, storage = _sweep(tmp_path, lambda p: 100.0, lambda p: 101.0, observer=observer)
    plans = [e[1] for e in observer.events if e[0] == "cost_plan"]
    assert len(plans) == 1
    plan = plans[0]
    assert plan.screening is not None
    assert plan.screening.full.healthy_s == pytest.approx(1800.0)
    assert plan.screening.screen.healthy_s == pytest.approx(60.0)
    text = "\n".join(plan_lines(plan))
    assert "a full load 30 min to healthy" in text, text
    assert "a screening launch saves 87%" in text, text
    assert "without screening (every launch a full load)" in text
    hours = plan.screening.hours(plan.screening.one_gain)
    without = plan.screening.hours_without(plan.screening.without[1])
    assert hours is not None and without is not None and hours < without
    # The sweep's summary counts both kinds of launch, and --trials against full loads.
    summary = plan_summary(plan)
    keep, gain = plan.screening.keep_defaults, plan.screening.one_gain
    assert len(summary) == 5 and all(len(line) < 100 for line in summary), "\n".join(summary)
    assert summary[2].startswith(f"  to an answer: {keep[0]} screening + {keep[1]} full ("), summary
    assert f"{gain[0]} + {gain[1]} (" in summary[2]
    assert summary[3] == "  --trials 12 (full loads) holds them", summary
    # The report has the whole plan, both kinds of launch with it.
    report = build_report(storage, "d")
    assert list(report.plan) == plan_lines(plan)


def test_the_final_comparison_takes_at_most_3_a_side_with_screening_by_default() -> None:
    # Full loads stay at 8 a study: the full baseline and 2 x 3 final launches.
    screened = parse_space(SCREENED, Path("s.yaml")).spec
    plain = parse_space(SPACE, Path("p.yaml")).spec
    assert (screened.final_launches_most, plain.final_launches_most) == (3, 6)
    explicit = {**SCREENED, "stop": {**SCREENED["stop"], "final_launches_max": 5}}
    assert parse_space(explicit, Path("s.yaml")).spec.final_launches_most == 5
    below = {**SPACE, "stop": {**SPACE["stop"], "final_launches_max": 1}}
    with pytest.raises(ConfigError, match="final_launches_max"):
        parse_space(below, Path("p.yaml"))
