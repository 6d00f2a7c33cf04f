"""What a sweep tells whoever is watching: a small observer interface.

The sweep and the runner call these hooks with what happened (a finished optuna trial,
the cost plan: the views word them; notices come as text); the CLI renders them with
rich (tuner/views/console.py), tests record them (tests/fakes.RecordingObserver). Every
hook has a do-nothing default so an observer implements only what it shows.
"""

from __future__ import annotations

from typing import Any

from optuna.trial import FrozenTrial


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

    def level_done(self, number: int, round_index: int, summary: Any) -> None:
        """One concurrency level of one round finished (``summary``: a LevelSummary)."""

    def trial_finished(self, trial: FrozenTrial, metric: str) -> None:
        """A trial ended (complete, pruned, failed); ``metric`` names its first objective.

        tuner/views/trial_line.py says it in one line.
        """

    def cost_plan(self, plan: Any) -> None:
        """Once, after the baseline launches: the study's cost plan (``plan``: a CostPlan).

        tuner/views/plan_text.py says it.
        """
