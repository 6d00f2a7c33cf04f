"""A reader of NCCL's example tuner plugin table, written from the plugin's README alone.

Source: NVIDIA/nccl, plugins/tuner/example/README.md (ext-tuner/example/README.md before
2.29), "Configuration File Format": one configuration per line,
``collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps
[,regBuff]]`` (8, 9 or 10 fields; a missing numPipeOps or regBuff matches any); comments
start with ``#`` and empty lines are ignored; no spaces after commas. The names are the
README's lists; ``-1`` is "any" (nNodes, nRanks, numPipeOps, regBuff) or "NCCL's default"
(channels); sizes run from 0 to 4294967295. The plugin itself maps an unknown name to a
default silently, so this reader is stricter: an unknown name is an error, a typo found.
Independent of tuner/views/nccl_tuner.py on purpose: it shares no code with the writer.
"""

from __future__ import annotations

from dataclasses import dataclass

COLLECTIVES = ("broadcast", "reduce", "allgather", "reducescatter", "allreduce")
ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOCOLS = ("ll", "ll128", "simple")
SIZE_MAX = 4294967295
LINE_BUFFER = 256
"""The plugin's line buffer (plugin.c's MAX_LINE_LENGTH), the newline included."""


class TableError(ValueError):
    """A line the documented format does not allow."""


@dataclass(frozen=True)
class Row:
    collective: str
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    channels: int
    n_nodes: int
    n_ranks: int
    num_pipe_ops: int
    reg_buff: int

    def matches(self, collective: str, n_bytes: int, n_nodes: int, n_ranks: int) -> bool:
        """The README's "Dimension Matching": exact values, or -1 for any."""
        return (
            self.collective == collective
            and self.min_bytes <= n_bytes <= self.max_bytes
            and self.n_nodes in (-1, n_nodes)
            and self.n_ranks in (-1, n_ranks)
        )


def parse_table(text: str) -> list[Row]:
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line.encode()) + 1 > LINE_BUFFER:
            raise TableError(f"line {number}: longer than the plugin's {LINE_BUFFER}-byte buffer")
        if line == "" or line.startswith("#"):
            continue
        fields = line.split(",")
        if not 8 <= len(fields) <= 10:
            raise TableError(f"line {number}: {len(fields)} fields, the format has 8 to 10")
        if any(f != f.strip() or f == "" for f in fields):
            raise TableError(f"line {number}: an empty field or spaces around a comma")
        fields += ["-1"] * (10 - len(fields))
        coll, low, high, algo, proto, channels, nodes, ranks, pipe_ops, reg = fields
        _name(coll, COLLECTIVES, "collective_type", number)
        _name(algo, ALGORITHMS, "algorithm", number)
        _name(proto, PROTOCOLS, "protocol", number)
        row = Row(
            coll,
            _int(low, number),
            _int(high, number),
            algo,
            proto,
            _int(channels, number),
            _int(nodes, number),
            _int(ranks, number),
            _int(pipe_ops, number),
            _int(reg, number),
        )
        if not 0 <= row.min_bytes <= row.max_bytes <= SIZE_MAX:
            raise TableError(f"line {number}: sizes out of 0 <= min_bytes <= max_bytes <= 2^32-1")
        for name, value in (
            ("channels", row.channels),
            ("nNodes", row.n_nodes),
            ("nRanks", row.n_ranks),
            ("numPipeOps", row.num_pipe_ops),
        ):
            if value != -1 and value < 1:
                raise TableError(f"line {number}: {name} is a positive integer or -1")
        if row.reg_buff not in (-1, 0, 1):
            raise TableError(f"line {number}: regBuff is 0, 1 or -1")
        rows.append(row)
    return rows


def lookup(
    rows: list[Row], collective: str, n_bytes: int, n_nodes: int, n_ranks: int
) -> Row | None:
    """The row applied to one collective call: the first that matches (None: NCCL's own)."""
    return next((r for r in rows if r.matches(collective, n_bytes, n_nodes, n_ranks)), None)


def _name(value: str, allowed: tuple[str, ...], field: str, number: int) -> None:
    if value not in allowed:
        raise TableError(f"line {number}: {field} {value!r} is not one of {', '.join(allowed)}")


def _int(value: str, number: int) -> int:
    try:
        return int(value, 10)
    except ValueError:
        raise TableError(f"line {number}: {value!r} is not an integer") from None
