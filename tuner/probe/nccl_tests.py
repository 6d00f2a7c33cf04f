"""`tuner probe nccl-tests -- all_reduce_perf ...`: nccl-tests' table as the probe's JSON.

``all_reduce_perf`` (github.com/NVIDIA/nccl-tests) prints a table, one row per message
size, under a two-line header whose columns name themselves (``size count type redop
root time algbw busbw #wrong time algbw busbw #wrong``, the first group out-of-place,
the second in-place; older releases lack ``root``). ``parse_table`` reads the rows by
those names, so a release with other columns still parses; lines of NCCL_DEBUG output
between them are skipped. A run with ``-N`` cycles prints several tables: every row of
a size is one sample. The tests' sizes are powers of a factor (``-b 8 -e 128M -f 2``);
tuner's sizes are interpolated between the two nearest, linearly in log-log.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuner.probe.run import ProbeError, run_once


@dataclass(frozen=True)
class Row:
    """One row of the table: a message size and its times (microseconds)."""

    size: int
    out_of_place_us: float
    in_place_us: float | None
    busbw_gbps: float | None


def parse_table(text: str) -> list[Row]:
    """Every data row of ``all_reduce_perf`` output; ProbeError when there is no table."""
    columns: list[str] | None = None
    rows: list[Row] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            words = stripped.lstrip("#").split()
            if "size" in words and "time" in words:
                columns = words
            continue
        if columns is None or not stripped:
            continue
        values = stripped.split()
        if len(values) != len(columns) or not values[0].isdigit():
            continue  # a log line between the rows
        rows.append(_row(columns, values))
    if not rows:
        raise ProbeError(
            "no all_reduce_perf table in the output: the command must be nccl-tests' "
            "all_reduce_perf (e.g. all_reduce_perf -b 8 -e 128M -f 2 -g 8)"
        )
    return rows


def _row(columns: list[str], values: list[str]) -> Row:
    times = [i for i, name in enumerate(columns) if name == "time"]
    busbw = [i for i, name in enumerate(columns) if name == "busbw"]
    return Row(
        size=int(values[columns.index("size")]),
        out_of_place_us=_number(values[times[0]]),
        in_place_us=_number(values[times[1]]) if len(times) > 1 else None,
        busbw_gbps=_number(values[busbw[0]]) if busbw else None,
    )


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ProbeError(f"all_reduce_perf printed {text!r} where a number belongs") from None


def samples_by_size(rows: Sequence[Row], *, in_place: bool = False) -> dict[int, list[float]]:
    """Each size's times (one per table the output holds)."""
    out: dict[int, list[float]] = {}
    for row in rows:
        value = row.in_place_us if in_place and row.in_place_us is not None else row.out_of_place_us
        out.setdefault(row.size, []).append(value)
    return out


def interpolate(measured: Mapping[int, float], size: int) -> float:
    """The time at ``size`` between the two nearest measured sizes (log-log linear)."""
    known = sorted(measured)
    if size in measured:
        return measured[size]
    if not known or size < known[0] or size > known[-1]:
        span = f"{known[0]}..{known[-1]}" if known else "nothing"
        raise ProbeError(
            f"size {size} is outside what all_reduce_perf measured ({span} bytes): widen its -b/-e"
        )
    i = bisect.bisect_left(known, size)
    lo, hi = known[i - 1], known[i]
    f = (math.log(size) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return math.exp((1 - f) * math.log(measured[lo]) + f * math.log(measured[hi]))


def probe_json(
    runs: Sequence[Sequence[Row]], sizes: Sequence[int] | None, *, in_place: bool = False
) -> dict[str, Any]:
    """The probe's JSON from the tables of one or more runs: every row is a sample, at
    ``sizes`` (interpolated) or at the sizes the tests measured."""
    tables: list[dict[int, list[float]]] = [samples_by_size(r, in_place=in_place) for r in runs]
    samples: dict[int, list[float]] = {}
    for table in tables:
        cycles = max(len(v) for v in table.values())
        for cycle in range(cycles):
            measured = {s: v[min(cycle, len(v) - 1)] for s, v in table.items()}
            for size in sizes or sorted(measured):
                samples.setdefault(size, []).append(interpolate(measured, size))
    busbw = {r.size: r.busbw_gbps for r in runs[-1] if r.busbw_gbps is not None}
    return {
        "sizes": {str(s): statistics.median(v) for s, v in sorted(samples.items())},
        "samples": {str(s): v for s, v in sorted(samples.items())},
        "backend": "nccl-tests",
        "placement": "in-place" if in_place else "out-of-place",
        "busbw_gbps": {str(s): b for s, b in sorted(busbw.items())},
    }


def run_nccl_tests(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    sizes: Sequence[int] | None,
    repeats: int = 1,
    timeout_s: float = 600.0,
    in_place: bool = False,
) -> dict[str, Any]:
    """Run ``all_reduce_perf`` ``repeats`` times and turn its tables into the probe's JSON."""
    if not argv:
        raise ProbeError("give the nccl-tests command after --, e.g. -- all_reduce_perf -g 8")
    runs = [parse_table(run_once(argv, env=env, timeout_s=timeout_s)) for _ in range(repeats)]
    return probe_json(runs, sizes, in_place=in_place)
