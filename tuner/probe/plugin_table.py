"""The CSV table of NCCL's example tuner plugin: one format, written and read.

tuner/views/nccl_tuner.py writes rows with :meth:`PluginRow.line`; `tuner check`
(tuner/check/nccl_tuner.py) reads a table a space points NCCL_TUNER_CONFIG_FILE at with
:func:`read_table`, by the same rules. The format is the plugin's README's (NVIDIA/nccl,
plugins/tuner/example since 2.29, ext-tuner/example before; docs/deploy.md)::

    collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff

numPipeOps and regBuff may be left out (8, 9 or 10 fields); ``-1`` is "any" (nNodes,
nRanks, numPipeOps, regBuff) or NCCL's own count (channels); a line starting with ``#``
is a comment and an empty line is skipped. The plugin reads lines in a 256-byte buffer
(the rest of a longer line is read as a line of its own) and maps a name it does not
know to ring or simple without a word, so the reader is stricter than the plugin: what
it would misread is an error here, with the line and what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuner.nccl import PROTOCOLS
from tuner.probe.per_size import MAX_BYTES, PLUGIN_ALGORITHMS

HEADER = (
    "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,"
    "numPipeOps,regBuff"
)
MAX_LINE = 255
"""Bytes: the plugin reads lines with a 256-byte buffer, newline included."""
COLLECTIVES = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
"""The plugin's collective names (its README's list)."""
ALGORITHM_NAMES = tuple(PLUGIN_ALGORITHMS.values())
"""The plugin's algorithm names."""
_INTEGER = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class PluginRow:
    """One line of the table: where (collective, size range, shape) and what (algorithm,
    protocol, channels)."""

    collective: str
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    channels: int
    n_nodes: int
    n_ranks: int
    num_pipe_ops: int = -1
    reg_buff: int = -1

    def line(self) -> str:
        """The row as the plugin reads it (all ten fields)."""
        return (
            f"{self.collective},{self.min_bytes},{self.max_bytes},{self.algorithm},"
            f"{self.protocol},{self.channels},{self.n_nodes},{self.n_ranks},"
            f"{self.num_pipe_ops},{self.reg_buff}"
        )


@dataclass(frozen=True)
class TableProblem:
    """A line the plugin would not read as written."""

    line: int
    """1-based."""
    message: str


@dataclass(frozen=True)
class ReadTable:
    rows: tuple[PluginRow, ...]
    problems: tuple[TableProblem, ...]


def read_table(text: str) -> ReadTable:
    """Every row of ``text``, and every line that is not a comment, blank or a valid row."""
    rows: list[PluginRow] = []
    problems: list[TableProblem] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if len(line.encode()) > MAX_LINE:
            problems.append(
                TableProblem(
                    number,
                    f"{len(line.encode())} bytes, longer than the plugin's {MAX_LINE + 1}-byte "
                    "line buffer (newline included): it would read the rest as another line",
                )
            )
            continue
        if not line.strip() or line.startswith("#"):
            continue
        try:
            rows.append(parse_row(line))
        except ValueError as exc:
            problems.append(TableProblem(number, str(exc)))
    return ReadTable(tuple(rows), tuple(problems))


def parse_row(line: str) -> PluginRow:
    """One row, or ValueError saying what is wrong with it."""
    fields = line.split(",")
    if not 8 <= len(fields) <= 10:
        hint = "; a comment starts with # in the first column" if "#" in line else ""
        raise ValueError(
            f"{len(fields)} comma-separated fields, the plugin reads 8 to 10 ({HEADER}){hint}"
        )
    for field in fields:
        if field != field.strip():
            raise ValueError(
                f"space around {field.strip()!r}: the plugin compares names as written "
                "(no spaces around commas)"
            )
    fields += ["-1"] * (10 - len(fields))
    collective, algorithm, protocol = fields[0], fields[3], fields[4]
    _name("collective_type", collective, COLLECTIVES)
    _name("algorithm", algorithm, ALGORITHM_NAMES)
    _name("protocol", protocol, PROTOCOLS)
    low = _int("min_bytes", fields[1], 0, MAX_BYTES)
    high = _int("max_bytes", fields[2], 0, MAX_BYTES)
    if low > high:
        raise ValueError(f"min_bytes {low} is above max_bytes {high}: the row matches no size")
    channels = _int("channels", fields[5], 1, None, any_value=True)
    nodes = _int("nNodes", fields[6], 1, None, any_value=True)
    ranks = _int("nRanks", fields[7], 1, None, any_value=True)
    pipe_ops = _int("numPipeOps", fields[8], 1, None, any_value=True)
    reg = _int("regBuff", fields[9], 0, 1, any_value=True)
    return PluginRow(
        collective, low, high, algorithm, protocol, channels, nodes, ranks, pipe_ops, reg
    )


def _name(field: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(
            f"{field} {value!r} is not one of {', '.join(allowed)} (the plugin reads an "
            "unknown name as its default without a word)"
        )


def _int(field: str, value: str, low: int, high: int | None, *, any_value: bool = False) -> int:
    minus_one = "-1 (NCCL's own count) or " if field == "channels" else "-1 (any) or "
    allowed = (minus_one if any_value else "") + (
        f"{low} to {high}" if high is not None else f"{low} or more"
    )
    if not _INTEGER.fullmatch(value):
        raise ValueError(f"{field} {value!r} is not a whole number: {allowed}")
    number = int(value)
    if (any_value and number == -1) or (number >= low and (high is None or number <= high)):
        return number
    raise ValueError(f"{field} {number} is out of range: {allowed}")
