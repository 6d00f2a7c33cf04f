"""What a sweep tells whoever is watching: a small observer interface.

The sweep and the runner call these hooks with what happened (a finished optuna trial,
the cost plan: the views word them; notices come as text); the CLI renders them with
rich (tuner/views/console.py), tests record them (tests/fakes.RecordingObserver). Every
hook has a do-nothing default so an observer implements only what it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from optuna.trial import FrozenTrial


class LiveStats(Protocol):
    """What a running benchmark level counts as it goes (tuner/bench/level.py ``LiveStats``:
    named here by its shape, events sit below the benchmark's layer)."""

    @property
    def planned(self) -> int | None: ...

    @property
    def completed(self) -> int: ...

    @property
    def phase(self) -> str: ...


@dataclass(frozen=True)
class BenchStep:
    """One concurrency level of a launch's benchmark, about to run; ``live`` is written by
    the benchmark as it goes (requests sent and done), so a view reads it while it runs."""

    round_index: int
    rounds: int
    level_index: int
    """Which of the round's levels (0-based)."""
    levels: int
    concurrency: int
    live: LiveStats

    @property
    def fraction(self) -> float:
        """The part of the launch's benchmark done: whole levels, and this one's requests."""
        planned = self.live.planned
        within = min(1.0, self.live.completed / planned) if planned else 0.0
        total = max(1, self.rounds * self.levels)
        return min(1.0, (self.round_index * self.levels + self.level_index + within) / total)


class SweepObserver:
    """Do-nothing observer; subclass and override what you want to show."""

    def message(self, text: str) -> None:
        """A one-line notice (a warning, a recovery, the stop reason)."""

    def trial_started(self, number: int, role: str, changed: dict[str, Any]) -> None:
        """A trial is about to launch the server with these non-default params."""

    def load_progress(self, number: int, percent: float | None, line: str) -> None:
        """The server printed model-load progress."""

    def healthy(self, number: int, seconds: float) -> None:
        """The server answered its health check after ``seconds``."""

    def probe_progress(self, done: int, total: int, what: str) -> None:
        """The all-reduce probe before the first launch: ``done`` of ``total`` NCCL settings
        probed (cached ones count at once); ``what`` is the one probed now ("" when done)."""

    def bench_level(self, number: int, step: BenchStep) -> None:
        """A concurrency level of the benchmark starts (its warm-up first, if any)."""

    def level_done(self, number: int, round_index: int, summary: Any) -> None:
        """One concurrency level of one round finished (``summary``: a LevelSummary)."""

    def stopping(self, number: int) -> None:
        """The trial's server is being stopped (after its benchmark, or after a failure)."""

    def trial_finished(self, trial: FrozenTrial, metric: str) -> None:
        """A trial ended (complete, pruned, failed); ``metric`` names its first objective.

        tuner/views/trial_line.py says it in one line.
        """

    def cost_plan(self, plan: Any) -> None:
        """Once, after the baseline launches: the study's cost plan (``plan``: a CostPlan).

        tuner/views/plan_text.py says it.
        """

    def resumed(self, launches_done: int, plan: Any | None) -> None:
        """A run opens on a study with launches already done (``--trials`` counts them),
        and its cost plan said before (``plan``: a CostPlan worked out again, or None):
        for a live view's count and time left; nothing to print."""
