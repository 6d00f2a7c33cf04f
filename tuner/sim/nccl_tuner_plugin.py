"""The simulator's model of NCCL's example tuner plugin: a CSV table, a protocol per size.

With ``NCCL_TUNER_PLUGIN`` set (not ``none``), the sim reads the table the example plugin
reads: ``NCCL_TUNER_CONFIG_FILE``, else ``nccl_tuner.conf`` in the working directory. It
reads it as the plugin does (plugins/tuner/example/plugin.c in NVIDIA/nccl): lines of
``collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks
[,numPipeOps[,regBuff]]``, ``#`` comments and blank lines skipped, a line with fewer than
8 fields ignored, a missing or unreadable file the same as no table. For each all-reduce
the first row whose size range (both ends included) and nRanks match sets the protocol
and algorithm, as if NCCL_PROTO / NCCL_ALGO named them for that message alone
(``applied``); no row leaves NCCL's choice. The sim runs on one node, so nNodes 1 or -1
matches; numPipeOps and regBuff are not modelled (one all-reduce per call, unregistered
buffers: a row asking for 1 or for registered buffers only does not match).

Unlike the plugin, which maps a misspelt name to ring or simple without a word, the sim
ignores such a row: an invented simplification, so a typo shows as no effect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tuner.nccl import SelectionList
from tuner.sim.nccl import NcclEnv

DEFAULT_FILE = "nccl_tuner.conf"
"""What the plugin reads without NCCL_TUNER_CONFIG_FILE."""
ALGORITHMS = {
    "tree": "tree",
    "ring": "ring",
    "collnet_direct": "collnetdirect",
    "collnet_chain": "collnetchain",
    "nvls": "nvls",
    "nvls_tree": "nvlstree",
    "pat": "pat",
}
"""The plugin's spelling -> tuner.nccl's."""
PROTOCOLS = ("ll", "ll128", "simple")


@dataclass(frozen=True)
class TableRow:
    min_bytes: int
    max_bytes: int
    algorithm: str
    protocol: str
    n_nodes: int
    n_ranks: int
    num_pipe_ops: int
    reg_buff: int


@dataclass(frozen=True)
class TunerTable:
    """The all-reduce rows of the table the plugin would load, in file order."""

    path: str
    rows: tuple[TableRow, ...]

    def row_for(self, n_bytes: int, n_ranks: int) -> TableRow | None:
        """The first row applied to an all-reduce of ``n_bytes`` over ``n_ranks`` ranks."""
        for row in self.rows:
            if (
                row.min_bytes <= n_bytes <= row.max_bytes
                and row.n_nodes in (-1, 1)
                and row.n_ranks in (-1, n_ranks)
                and row.num_pipe_ops in (-1, 1)
                and row.reg_buff in (-1, 0)
            ):
                return row
        return None


def read_table(env: Mapping[str, str]) -> TunerTable | None:
    """The table of this environment, or None without the plugin or its file."""
    plugin = env.get("NCCL_TUNER_PLUGIN", "").strip()
    if not plugin or plugin.lower() == "none":
        return None
    path = env.get("NCCL_TUNER_CONFIG_FILE") or DEFAULT_FILE
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None  # the plugin logs "Config file ... not found, using defaults"
    return TunerTable(path, tuple(r for line in text.splitlines() if (r := _row(line))))


def applied(nccl: NcclEnv, table: TunerTable | None, n_bytes: int, n_ranks: int) -> NcclEnv:
    """The NCCL settings one all-reduce of ``n_bytes`` runs with: the matching row's
    protocol and algorithm in place of NCCL_PROTO / NCCL_ALGO, else ``nccl`` itself."""
    row = None if table is None else table.row_for(n_bytes, n_ranks)
    if row is None:
        return nccl
    return dataclasses.replace(
        nccl,
        proto=_only("allreduce:" + row.protocol, row.protocol),
        algo=_only("allreduce:" + row.algorithm, ALGORITHMS[row.algorithm]),
    )


def _only(raw: str, value: str) -> SelectionList:
    return SelectionList(raw, None, (("allreduce", frozenset({value})),), False)


def _row(line: str) -> TableRow | None:
    if not line.strip() or line.startswith("#"):
        return None
    fields = [f.strip() for f in line.split(",")]
    if not 8 <= len(fields) <= 10 or fields[0] != "allreduce":
        return None
    fields += ["-1"] * (10 - len(fields))
    try:
        low, high = int(fields[1]), int(fields[2])
        nodes, ranks, pipe_ops, reg = (int(f) for f in fields[6:10])
    except ValueError:
        return None
    if fields[3] not in ALGORITHMS or fields[4] not in PROTOCOLS:
        return None
    return TableRow(low, high, fields[3], fields[4], nodes, ranks, pipe_ops, reg)
