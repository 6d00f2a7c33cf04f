"""What a sweep tells whoever is watching: a small observer interface.

The sweep and the runner call these hooks; the CLI renders them with rich, tests
record them. Every hook has a do-nothing default so an observer implements only
what it shows.
"""

from __future__ import annotations

from typing import Any


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

    def trial_finished(self, number: int, line: str) -> None:
        """A trial ended (complete, pruned, failed); ``line`` is its one-line account."""


class RecordingObserver(SweepObserver):
    """Keeps every event as a tuple; used by tests and by `--format json` runs."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def message(self, text: str) -> None:
        self.events.append(("message", text))

    def trial_started(self, number: int, role: str, changed: dict[str, Any]) -> None:
        self.events.append(("trial_started", number, role, changed))

    def load_progress(self, number: int, percent: float | None, line: str) -> None:
        self.events.append(("load_progress", number, percent, line))

    def healthy(self, number: int, seconds: float) -> None:
        self.events.append(("healthy", number, seconds))

    def level_done(self, number: int, round_index: int, summary: Any) -> None:
        self.events.append(("level_done", number, round_index, summary))

    def trial_finished(self, number: int, line: str) -> None:
        self.events.append(("trial_finished", number, line))
