"""A running level's progress, counted as its requests finish, for the live views.

The benchmark writes it as it goes and the live views (tuner/views/console_live.py,
tuner/views/bench.py) read it at each refresh; a level run by several client processes
has one per process, folded into one with ``add``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LiveStats:
    """Progress of the running level, for a live view; written by the runner, read by anyone."""

    phase: str = "starting"
    concurrency: int = 0
    planned: int | None = None
    sent: int = 0
    completed: int = 0
    errors: int = 0
    in_flight: int = 0
    chunks: int = 0
    chunks_done: int = 0
    output_tokens: int = 0
    window_start: float | None = None
    last_error: str | None = None
    lag_max_s: float = 0.0

    def reset(self) -> None:
        """Zero the counters for a new attempt at the same level."""
        fresh = LiveStats(concurrency=self.concurrency, planned=self.planned)
        self.__dict__.update(fresh.__dict__)

    def add(self, other: LiveStats) -> None:
        """Fold a worker's counters into this one (the phase stays)."""
        for name in (
            "sent",
            "completed",
            "errors",
            "in_flight",
            "chunks",
            "chunks_done",
            "output_tokens",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.lag_max_s = max(self.lag_max_s, other.lag_max_s)
        self.last_error = other.last_error or self.last_error
