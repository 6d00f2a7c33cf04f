"""The sweep's live view (tuner/views/console_live.py): what each phase shows, fitted to the
terminal's width with whole words, never None, and the time left by the cost plan."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from rich.console import Console

from tests.unit.test_study_plan import SPACE, load_space_dict, noise_of
from tuner.bench.level import LiveStats
from tuner.events import BenchStep
from tuner.study.facts.launch_times import LaunchTimes
from tuner.study.facts.plan import cost_plan
from tuner.views.console_live import (
    SEP,
    LiveView,
    Piece,
    Row,
    clock_text,
    fit_rows,
    left_text,
    pace_of,
)

# The load line of the report: tqdm's redraw, cut by the terminal in its ETA.
SHARDS = "Loading safetensors checkpoint shards:   2% Completed | 1/64 [00:00<00:03, 17.1it/s]"
_VOCABULARY = (
    "study launches time left left: after baseline checking the space and server all-reduce "
    "probe NCCL settings choosing next launch trial starting stopping benchmark round "
    "concurrency requests warm-up connecting s min h to longer than planned loading"
)
OWN_WORDS = set(_VOCABULARY.split())
NUMBER = r"\d+(?:\.\d+)?%?|\d+/\d+|\d+:\d\d:\d\d"
LONG_PHASE = "Starting to load model /models/" + "very-long-directory-name/" * 8 + " ..."


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _render(view: LiveView, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(view)
    return console.export_text().rstrip("\n").split("\n")


def _words(line: str) -> list[str]:
    """The words of a rendered line, without the spinner, bars and separators."""
    text = re.sub(r"[━╸╺⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]+", " ", line).replace(SEP.strip(), " ")
    return text.split()


def _plan(budget: int = 20) -> object:
    spec = load_space_dict(SPACE).spec
    return cost_plan(
        spec,
        noise_of(0.01, 0.01),
        LaunchTimes(2, 1.2, 11.0),
        baseline_measured=2,
        budget=budget,
    )


def _states(view: LiveView, clock: Clock) -> Iterator[str]:
    """Drive the view through a study's phases, naming each."""
    yield "preparing"
    view.probe(0, 16, "the defaults")
    clock.now += 0.5
    yield "probe start"
    view.probe(5, 16, "NCCL_ALGO=allreduce:ring")
    clock.now += 1
    yield "probe"
    view.probe(16, 16, "")
    yield "choosing"
    view.trial_started(0, "baseline", "defaults")
    yield "starting"
    view.load_line(0, 2.0, SHARDS)
    clock.now += 0.4
    yield "loading shards"
    view.load_line(0, None, LONG_PHASE)
    yield "loading phase"
    view.healthy(0)
    yield "healthy"
    live = LiveStats(concurrency=4)
    view.bench_level(0, BenchStep(0, 3, 1, 2, 4, live))
    yield "bench waiting"
    live.phase, live.planned, live.completed = "measuring", 40, 13
    clock.now += 3
    yield "bench"
    view.stopping(0)
    yield "stopping"
    view.trial_finished(0)
    yield "finished"
    view.plan(_plan())  # type: ignore[arg-type]
    view.trial_started(1, "search", "compilation=0 disable_custom_all_reduce=True")
    clock.now += 0.5
    yield "starting with a plan"
    view.bench_level(1, BenchStep(2, 3, 0, 2, 1, LiveStats(concurrency=1, phase="measuring")))
    clock.now += 5
    yield "bench with a plan"


@pytest.mark.parametrize("width", [24, 40, 60, 80, 100, 120, 200])
def test_every_phase_fits_the_width_in_whole_words_and_never_says_none(width: int) -> None:
    clock = Clock()
    view = LiveView("sim-nccl", 20, clock=clock)
    sources = " ".join(
        [SHARDS, LONG_PHASE, "sim-nccl compilation=0 disable_custom_all_reduce=True"]
        + ["NCCL_ALGO=allreduce:ring the defaults (baseline) (search) shards"]
    )
    for state in _states(view, clock):
        lines = _render(view, width)
        assert len(lines) == 2, (state, lines)
        for line in lines:
            assert len(line) <= width, (state, line)
            assert "None" not in line and "…" not in line, (state, line)
            for word in _words(line):
                # Each word is a whole word of what the view was told, or one of its own.
                ok = word in sources.split() or word in OWN_WORDS or re.fullmatch(NUMBER, word)
                assert ok, (state, word, line)


def test_the_load_line_shows_the_phase_and_shard_count_not_tqdm_s_eta() -> None:
    clock = Clock()
    view = LiveView("s", 4, clock=clock)
    view.trial_started(0, "baseline", "defaults")
    view.load_line(0, 2.0, SHARDS)
    for width in (80, 120):
        line = _render(view, width)[1]
        assert "Loading safetensors checkpoint" in line and "1/64" in line
        assert "[00" not in line and "Completed" not in line


def test_the_benchmark_line_moves_with_the_requests_done() -> None:
    clock = Clock()
    view = LiveView("s", 4, clock=clock)
    view.trial_started(3, "search", "defaults")
    view.healthy(3)
    live = LiveStats(concurrency=1)
    step = BenchStep(round_index=1, rounds=3, level_index=0, levels=2, concurrency=1, live=live)
    view.bench_level(3, step)
    assert "warm-up" in _render(view, 80)[1] or "connecting" in _render(view, 80)[1]
    seen = []
    for done in (0, 2, 4):
        live.phase, live.planned, live.completed = "measuring", 4, done
        line = _render(view, 120)[1]
        assert f"{done}/4 requests" in line and "round 2/3" in line and "concurrency 1" in line
        seen.append(step.fraction)
    assert seen == [2 / 6, 2.5 / 6, 3 / 6]
    assert f"{2}/4 requests" not in _render(view, 80)[1]  # it says the latest count only


def test_time_left_comes_from_the_plan_once_it_is_said() -> None:
    clock = Clock()
    view = LiveView("sim-nccl", 4, clock=clock)
    view.trial_started(0, "baseline", "defaults")
    study, trial = _render(view, 80)
    assert "time left: after baseline" in study and "left" not in trial
    view.trial_finished(0)
    view.trial_started(1, "baseline", "defaults")
    view.trial_finished(1)
    plan = _plan(budget=4)
    view.plan(plan)
    pace = pace_of(plan, clock.now)
    assert pace is not None and pace.healthy_s == 1.2 and pace.rest_s == 11.0
    # budget 4, 2 launches done at 12.2 s each: 2 more.
    assert pace.study_left(clock.now) == pytest.approx((24.4, 24.4))
    view.trial_started(2, "search", "compilation=0")
    clock.now += 5
    study, trial = _render(view, 80)
    assert "2/4 launches" in study and "19 s left" in study
    assert "11 s left" in trial  # 1.2 s to healthy (none left at 5 s) + 11 s of benchmark
    assert clock_text(5) in trial and clock_text(5) in study  # both began at this moment
    live = LiveStats(concurrency=1, planned=4, completed=2, phase="measuring")
    view.bench_level(2, BenchStep(1, 2, 0, 1, 1, live))  # half of round 2 of 2: 3/4 done
    assert "3 s left" in _render(view, 80)[1]
    clock.now += 60
    assert "longer than planned" in _render(view, 80)[0]


def test_a_study_and_a_trial_have_their_own_clocks() -> None:
    clock = Clock()
    view = LiveView("s", 4, clock=clock)
    clock.now += 100
    view.trial_started(0, "baseline", "defaults")
    clock.now += 7
    study, trial = _render(view, 80)
    assert "0:01:47" in study and "0:00:07" in trial
    view.trial_finished(0)
    clock.now += 2
    study, trial = _render(view, 80)
    assert "1/4 launches" in study and "choosing the next launch" in trial and "0:00:02" in trial


def test_left_text_says_a_range_once() -> None:
    assert left_text(40, 40) == "40 s left"
    assert left_text(120, 240) == "2 to 4 min left"
    assert left_text(50 * 60, 72 * 60) == "50 min to 1.2 h left"
    assert left_text(0.2, 0.2) == "1 s left"


def test_fit_drops_the_highest_rank_first_and_keeps_the_bar_when_it_can() -> None:
    row = Row(
        head=(Piece("trial 2"), Piece("benchmark", rank=5), Piece("3/4 requests", rank=1)),
        tail=(Piece("0:00:05"), Piece("9 s left", rank=1)),
        done=0.5,
        bar_rank=3,
    )
    wide = fit_rows([row], 80, now=0.0)[0].plain
    assert "benchmark" in wide and "━" in wide and wide.endswith("9 s left")
    narrow = fit_rows([row], 56, now=0.0)[0].plain
    assert "benchmark" not in narrow and "3/4 requests" in narrow and "━" in narrow
    tiny = fit_rows([row], 36, now=0.0)[0].plain
    assert "━" not in tiny and "3/4 requests" in tiny and "left" not in tiny and len(tiny) <= 36
