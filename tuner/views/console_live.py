"""The sweep's live view: two lines under the printed ones, the study's and what runs now.

The study line: the study, its launches done of the budget (a bar), the study's clock and,
once the cost plan is known (after the baseline), the time left by the plan's figures
(tuner/study/facts/plan.py: a launch's seconds, the launches to keep the defaults and to
one gain found, within the budget). The activity line: what runs now (the checks, the
all-reduce probe, a trial's server start, its load with the shard count, its benchmark
with the requests done, its stop), a bar where the progress is known, the activity's own
clock and its time left (a trial's from the plan's seconds to healthy and of benchmark;
the probe's from its own pace).

Each line is fitted to the terminal's width (``fit_rows``, tuner/views/live_layout.py): the
least telling pieces go first, then the bar; a word is never cut, and no figure that is not
known is shown. tuner/views/console.py feeds the view from the sweep's events and shows it
with rich's Live.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, RenderResult

from tuner.events import BenchStep
from tuner.launcher.progress import parse_progress
from tuner.study.facts.plan import CostPlan
from tuner.views.live_layout import SEP, Piece, Row, fit_rows

__all__ = [
    "SEP",
    "Activity",
    "LiveView",
    "Pace",
    "Piece",
    "Row",
    "clock_text",
    "duration_text",
    "fit_rows",
    "left_text",
    "pace_of",
]

_WAITING = ("starting", "connecting", "warmup")


# --- what the figures say --------------------------------------------------------------


def clock_text(seconds: float) -> str:
    """Elapsed time as H:MM:SS."""
    whole = max(0, int(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def duration_text(seconds: float) -> str:
    """A time left, rounded to what an estimate deserves: 40 s, 3 min, 1.5 h."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    return f"{seconds / 3600:.1f} h"


def left_text(low: float, high: float) -> str:
    """'40 s left', '2 to 4 min left', '50 min to 1.2 h left'."""
    a, b = duration_text(low), duration_text(high)
    if a == b:
        return f"{a} left"
    unit_a, unit_b = a.split()[1], b.split()[1]
    if unit_a == unit_b:
        return f"{a.split()[0]} to {b} left"
    return f"{a} to {b} left"


@dataclass(frozen=True)
class Pace:
    """The cost plan's figures the view needs: a launch's seconds, and the study's total."""

    healthy_s: float
    rest_s: float
    low_s: float
    """Start to end of the study's launches at the quickest verdict (keep the defaults)."""
    high_s: float
    """At a verdict with one gain found (within the budget)."""
    spent_s: float
    """Launch seconds spent when the plan was said."""
    said_at: float
    """The view's clock when the plan was said."""

    def study_left(self, now: float) -> tuple[float, float]:
        gone = self.spent_s + max(0.0, now - self.said_at)
        return max(0.0, self.low_s - gone), max(0.0, self.high_s - gone)


def pace_of(plan: CostPlan, said_at: float) -> Pace | None:
    """The plan's pace, or None when a launch has not been timed yet."""
    screening = plan.screening
    if screening is not None:
        full, screen = screening.full, screening.screen
        low_h, high_h = screening.keep_hours, screening.gain_hours
        spent = sum(t.launches * (t.per_launch_s or 0.0) for t in (full, screen))
        times = full
    else:
        times = plan.times
        budget = plan.budget
        low_h = plan.hours(plan.quickest if budget is None else min(plan.quickest, budget))
        high_h = plan.hours(plan.typical if budget is None else min(plan.typical, budget))
        spent = times.launches * (times.per_launch_s or 0.0)
    if times.healthy_s is None or times.rest_s is None or low_h is None or high_h is None:
        return None
    return Pace(
        healthy_s=times.healthy_s,
        rest_s=times.rest_s,
        low_s=low_h * 3600,
        high_s=max(low_h, high_h) * 3600,
        spent_s=spent,
        said_at=said_at,
    )


# --- the state the events leave ----------------------------------------------------------


@dataclass(frozen=True)
class Activity:
    """What runs now. ``kind``: preparing, probe, starting, loading, benchmark, stopping,
    choosing. ``since``: the view's clock when it began (a trial's: when it started)."""

    kind: str
    since: float
    trial: int | None = None
    role: str = ""
    detail: str = ""
    done: int | None = None
    total: int | None = None
    percent: float | None = None
    step: BenchStep | None = None
    loaded_at: float | None = None
    """When the trial's server turned healthy (its benchmark's start)."""


@dataclass
class LiveView:
    """The view's state, changed by the sweep's events and drawn at each refresh (a rich
    renderable: the Live display calls ``__rich_console__`` a few times a second)."""

    study: str
    budget: int
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    activity: Activity = field(init=False)
    pace: Pace | None = None
    launched: set[int] = field(default_factory=set)
    launches_done: int = 0
    probe_started: float | None = None

    def __post_init__(self) -> None:
        self.started = self.clock()
        self.activity = Activity("preparing", self.started)

    # --- events ---

    def probe(self, done: int, total: int, what: str) -> None:
        now = self.clock()
        if done >= total:
            self.activity = Activity("choosing", now)
            return
        if self.probe_started is None or self.activity.kind != "probe":
            self.probe_started = now
        self.activity = Activity("probe", self.probe_started, detail=what, done=done, total=total)

    def trial_started(self, number: int, role: str, changed: str) -> None:
        self.launched.add(number)
        self.activity = Activity("starting", self.clock(), trial=number, role=role, detail=changed)

    def load_line(self, number: int, percent: float | None, line: str) -> None:
        current = self._trial(number)
        progress = parse_progress(line)
        if progress is not None:
            detail, done, total = progress.phase, progress.done, progress.total
            percent = progress.percent if progress.percent is not None else percent
        else:
            detail, done, total = line.strip(), None, None
        self.activity = Activity(
            "loading",
            current.since,
            trial=number,
            role=current.role,
            detail=detail,
            done=done,
            total=total,
            percent=percent,
        )

    def healthy(self, number: int) -> None:
        current = self._trial(number)
        self.activity = Activity(
            "benchmark", current.since, trial=number, role=current.role, loaded_at=self.clock()
        )

    def bench_level(self, number: int, step: BenchStep) -> None:
        current = self._trial(number)
        self.activity = Activity(
            "benchmark",
            current.since,
            trial=number,
            role=current.role,
            step=step,
            loaded_at=current.loaded_at or self.clock(),
        )

    def stopping(self, number: int) -> None:
        current = self._trial(number)
        self.activity = Activity("stopping", current.since, trial=number, role=current.role)

    def trial_finished(self, number: int) -> None:
        if number in self.launched:
            self.launched.discard(number)
            self.launches_done += 1
        self.activity = Activity("choosing", self.clock())

    def plan(self, plan: CostPlan) -> None:
        self.pace = pace_of(plan, self.clock())

    def _trial(self, number: int) -> Activity:
        if self.activity.trial == number:
            return self.activity
        return Activity("starting", self.clock(), trial=number)

    # --- drawing ---

    def rows(self, now: float | None = None) -> list[Row]:
        now = self.clock() if now is None else now
        return [self.study_row(now), self.activity_row(now)]

    def study_row(self, now: float) -> Row:
        head = (
            Piece(f"study {self.study}", rank=4, style="bold"),
            Piece(f"{self.launches_done}/{self.budget} launches", style="bold"),
        )
        tail = [Piece(clock_text(now - self.started))]
        if self.pace is None:
            tail.append(Piece("time left: after baseline", rank=5, style="dim"))
        else:
            low, high = self.pace.study_left(now)
            text = left_text(low, high) if high > 0 else "longer than planned"
            tail.append(Piece(text, rank=1, style="cyan"))
        done = min(1.0, self.launches_done / self.budget) if self.budget else None
        return Row(tuple(head), tuple(tail), done=done, bar_rank=3)

    def activity_row(self, now: float) -> Row:
        a = self.activity
        clock = Piece(clock_text(now - a.since))
        if a.kind == "preparing":
            return Row(
                (Piece("checking the space and the server", shrink=True),), (clock,), spin=True
            )
        if a.kind == "choosing":
            return Row((Piece("choosing the next launch", shrink=True),), (clock,), spin=True)
        if a.kind == "probe":
            return self._probe_row(a, now, clock)
        who = Piece(f"trial {a.trial} ({a.role})" if a.role else f"trial {a.trial}", style="bold")
        left = self._trial_left(a, now)
        tail = (clock, Piece(left, rank=1, style="cyan")) if left else (clock,)
        if a.kind == "starting":
            head = [who, Piece("starting the server")]
            if a.detail:
                head.append(Piece(a.detail, rank=7, style="dim"))
            return Row(tuple(head), tail, done=None, bar_rank=3, spin=True)
        if a.kind == "loading":
            head = [who, Piece(a.detail or "loading", rank=2, shrink=True)]
            if a.done is not None and a.total is not None:
                head.append(Piece(f"{a.done}/{a.total}", rank=1))
            elif a.percent is not None:
                head.append(Piece(f"{a.percent:.0f}%", rank=1))
            done = a.percent / 100 if a.percent is not None else None
            return Row(tuple(head), tail, done=done, bar_rank=3, spin=True)
        if a.kind == "benchmark":
            return self._bench_row(a, who, tail)
        return Row((who, Piece("stopping the server")), (clock,), spin=True)

    def _probe_row(self, a: Activity, now: float, clock: Piece) -> Row:
        done, total = a.done or 0, a.total or 0
        head = (
            Piece("all-reduce probe", style="bold"),
            Piece(f"{done}/{total} NCCL settings", rank=1),
            Piece(a.detail, rank=5),
        )
        tail = [clock]
        if done >= 1:  # its own pace: no plan exists before the first launch
            per = (now - a.since) / done
            tail.append(Piece(left_text(per * (total - done), per * (total - done)), rank=2))
        fraction = done / total if total else None
        return Row(head, tuple(tail), done=fraction, bar_rank=3, spin=True)

    def _bench_row(self, a: Activity, who: Piece, tail: tuple[Piece, ...]) -> Row:
        step = a.step
        if step is None:
            return Row((who, Piece("benchmark starting")), tail, done=0.0, bar_rank=3, spin=True)
        live = step.live
        head = [
            who,
            Piece("benchmark", rank=5),
            Piece(f"round {step.round_index + 1}/{step.rounds}"),
            Piece(f"concurrency {step.concurrency}", rank=4),
        ]
        if live.completed == 0 and live.phase in _WAITING:
            head.append(Piece("warm-up" if live.phase == "warmup" else "connecting", rank=1))
        else:
            planned = f"/{live.planned}" if live.planned else ""
            head.append(Piece(f"{live.completed}{planned} requests", rank=1))
        return Row(tuple(head), tail, done=step.fraction, bar_rank=3, spin=True)

    def _trial_left(self, a: Activity, now: float) -> str | None:
        pace = self.pace
        if pace is None:
            return None
        if a.kind in ("starting", "loading"):
            left = max(0.0, pace.healthy_s - (now - a.since)) + pace.rest_s
            return left_text(left, left)
        if a.kind == "benchmark":
            fraction = a.step.fraction if a.step is not None else 0.0
            left = pace.rest_s * (1 - fraction)
            return left_text(left, left)
        return None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        now = self.clock()
        yield from fit_rows(self.rows(now), options.max_width, now)
