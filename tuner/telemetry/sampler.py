"""A background thread that takes a reading every ``interval_s`` and keeps the last N.

The GPU, host and /metrics samplers differ only in what one reading is; the
thread, the bounded buffer, the level marks and the time slicing live here once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

log = logging.getLogger(__name__)


class Timed(Protocol):
    @property
    def time_s(self) -> float: ...


R = TypeVar("R", bound=Timed)


class PeriodicSampler(Generic[R]):
    """Calls ``_read()`` at start, every ``interval_s`` while running, and once more at stop.

    The reading at stop gives every level an end point, so a short level still spans
    its whole duration. Records are kept in a ring buffer of ``max_records``; older ones
    are dropped (``dropped`` counts them) so a sampler forgotten in a long run cannot
    eat the host's memory. A reading that raises is counted in ``errors`` and skipped:
    telemetry never stops a measurement.

    Two ways to split records per benchmark level; use whichever the caller has:

    - ``window(start_s, end_s)``: records whose ``time_s`` (``time.time()``) falls in the
      level's wall-clock span (or ``samples_since(start_s)`` right after the level). The
      sweep knows each level's start and end, so this is the one it uses.
    - ``mark(label)`` at each level's start, then ``by_mark()``: records grouped by the
      latest mark before them.
    """

    thread_name = "tuner-sampler"

    def __init__(self, interval_s: float = 1.0, *, max_records: int = 100_000) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = float(interval_s)
        self._records: deque[R] = deque(maxlen=max_records)
        self._marks: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.errors = 0
        self.last_error: str | None = None

    # -- what subclasses provide ----------------------------------------------------------

    def _read(self) -> Iterable[R]:
        """One tick's readings (several records when sampling several devices)."""
        raise NotImplementedError

    def _enabled(self) -> bool:
        """False when there is nothing to sample; start() then starts no thread."""
        return True

    def _prime(self) -> None:
        """Called once in start(), before the first reading (for delta-based figures)."""

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> PeriodicSampler[R]:
        if self.running:
            return self
        if not self._enabled():
            return self
        self._stop.clear()
        self._prime()
        self._tick()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[R]:
        """Stop the thread (after one last reading) and return every record kept."""
        thread = self._thread
        if thread is not None:
            self._stop.set()
            try:
                thread.join(timeout=max(5.0, 2 * self.interval_s))
            except RuntimeError:
                # A signal (Ctrl-C, SIGTERM) interrupted start() before the thread had
                # started. If it starts after all, it sees _stop at its first wait and ends;
                # raising here would hide the signal behind "cannot join thread".
                log.debug("%s was stopped before it had started", self.thread_name)
            if thread.is_alive():
                log.warning("%s did not stop within its timeout", self.thread_name)
            self._thread = None
        return self.records()

    def __enter__(self) -> PeriodicSampler[R]:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        # Ticks are scheduled on a fixed grid (monotonic clock), so a slow reading
        # does not drift the rate; a tick missed entirely is skipped, not caught up in a burst.
        next_t = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            self._tick()
            next_t += self.interval_s
            now = time.monotonic()
            if next_t < now:
                next_t = now + self.interval_s
        self._tick()

    def _tick(self) -> None:
        try:
            batch = list(self._read())
        except Exception as exc:  # noqa: BLE001 - a failed reading must not end the sampler
            self._record_error(exc)
            return
        self._append(batch)

    def _record_error(self, exc: BaseException) -> None:
        with self._lock:
            self.errors += 1
            first = self.last_error is None
            self.last_error = f"{type(exc).__name__}: {exc}"
        if first:
            log.warning(
                "%s: a reading failed (%s); further failures are only counted",
                self.thread_name,
                self.last_error,
            )

    def _append(self, batch: list[R]) -> None:
        with self._lock:
            maxlen = self._records.maxlen
            if maxlen is not None:
                self.dropped += max(0, len(self._records) + len(batch) - maxlen)
            self._records.extend(batch)

    # -- reading the records --------------------------------------------------------------

    def records(self) -> list[R]:
        with self._lock:
            return list(self._records)

    def mark(self, label: str) -> None:
        """Start a new segment named ``label`` now (e.g. "c8-r1" at a level's start)."""
        with self._lock:
            self._marks.append((label, time.time()))

    @property
    def marks(self) -> list[tuple[str, float]]:
        with self._lock:
            return list(self._marks)

    def window(self, start_s: float, end_s: float) -> list[R]:
        """Records with ``start_s <= time_s <= end_s`` (wall-clock seconds, ``time.time()``)."""
        return [r for r in self.records() if start_s <= r.time_s <= end_s]

    def samples_since(self, start_s: float) -> list[R]:
        """Records with ``time_s >= start_s``: a level's, when called right after it ends."""
        return [r for r in self.records() if r.time_s >= start_s]

    def by_mark(self) -> dict[str, list[R]]:
        """Records grouped by the latest mark at or before each; "" holds those before any.

        A label marked twice collects both segments.
        """
        marks = self.marks
        groups: dict[str, list[R]] = {}
        for record in self.records():
            label = ""
            for name, at in marks:
                if at <= record.time_s:
                    label = name
                else:
                    break
            groups.setdefault(label, []).append(record)
        return groups
