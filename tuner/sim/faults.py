"""Faults across launches: a slow first launch (a cold cache) and a drift over launches.

A launch of the simulator is one process, so a fault that depends on *which* launch it is
needs state that outlives the process: ``--launch-index-file PATH``, a small text file
holding the number of launches counted so far. Each start reads it, writes it back plus
one, under an exclusive ``fcntl.flock``, and takes the number it read as its launch index
(0 for a missing or empty file). Two launches that start at once get different indices.

The faults are a factor on this launch's throughput, on top of the per-launch noise:

- ``--cold-first-launch F``: launch 0 runs with throughput x (1 - F), as a cold page cache
  or compile cache would; later launches are unaffected.
- ``--drift D`` over ``--drift-launches N``: launch k runs with throughput
  x (1 - D x min(k, N) / N); a positive D slows down (a machine that throttles or gets
  busier over hours), a negative one speeds up (one that warms), and it stays at D from
  launch N on.

The engine divides every step's duration (decode and prefill) by the factor, so a
decode-bound tok/s is exactly that factor lower. Figures are fractions (0.05 is 5%), like
``--launch-noise``. docs/simulator.md ("Faults across launches") documents the flags;
tests/fakes.py's FakeRunner applies the same factor to its launches without processes.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

DEFAULT_DRIFT_LAUNCHES = 20
MAX_FAULT = 0.5  # above 50% is a percentage typed as a fraction, as for the noise flags


def throughput_factor(
    index: int,
    cold_first: float = 0.0,
    drift: float = 0.0,
    drift_launches: int = DEFAULT_DRIFT_LAUNCHES,
) -> float:
    """Launch ``index``'s throughput relative to a launch with no fault (1.0: none).

    ``(1 - cold_first)`` at index 0, times ``(1 - drift x min(index, drift_launches) /
    drift_launches)``; the drift is 0 at index 0, so the two never compound.
    """
    if index < 0:
        raise ValueError(f"a launch index is >= 0, got {index}")
    if drift_launches < 1:
        raise ValueError(f"drift_launches must be at least 1, got {drift_launches}")
    cold = cold_first if index == 0 else 0.0
    return (1.0 - cold) * (1.0 - drift * min(index, drift_launches) / drift_launches)


def slowdown(
    index: int,
    cold_first: float = 0.0,
    drift: float = 0.0,
    drift_launches: int = DEFAULT_DRIFT_LAUNCHES,
) -> float:
    """The factor on launch ``index``'s step durations: 1 / :func:`throughput_factor`."""
    return 1.0 / throughput_factor(index, cold_first, drift, drift_launches)


class LaunchIndexError(OSError):
    """The launch-index file cannot be read, written, or holds something else than a count."""


def next_launch_index(path: str | os.PathLike[str]) -> int:
    """This launch's index from the counter file at ``path``, which it then increments.

    Creates the file (and its folder) when missing. The read and the write happen under
    one exclusive ``flock``, so concurrent starts never share an index.
    """
    target = Path(path)
    with locked_state_file(target, "--launch-index-file", LaunchIndexError) as f:
        text = f.read().strip()
        try:
            index = int(text) if text else 0
        except ValueError:
            index = -1
        if index < 0:
            raise LaunchIndexError(
                f"--launch-index-file {target}: holds {text[:40]!r}, not a count of launches "
                "(delete it to start again from launch 0)"
            )
        f.seek(0)
        f.truncate()
        f.write(f"{index + 1}\n")
        f.flush()
        os.fsync(f.fileno())
    return index


@contextmanager
def locked_state_file(target: Path, flag: str, error: type[OSError]) -> Iterator[TextIO]:
    """``target`` open to read and write (created, with its folder, when missing) under an
    exclusive ``flock``, released when the file closes: a state that outlives one launch,
    read and written whole by one start at a time. Not opened: ``error`` naming ``flag``."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise error(f"{flag} {target}: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "r+", encoding="utf-8", errors="replace") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield f
