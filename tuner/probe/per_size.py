"""NCCL's choice per message size, from the probes: the rows of a tuner plugin's table.

One global NCCL_PROTO / NCCL_ALGO picks one protocol for every all-reduce, while decode
all-reduces a few KB and prefill megabytes. NCCL's example tuner plugin (docs/deploy.md)
reads a table of size ranges instead. ``per_size_choices`` decides, at each probed size,
which probed setting is the fastest of those significantly faster than the default's
(``compare_probe``: Welch at the study's confidence); where none is, NCCL keeps its own
choice. ``size_ranges`` turns those decisions into contiguous, non-overlapping byte ranges.

A setting can be a row only when what it changes is what a row sets: one all-reduce
protocol, at most one algorithm, and a channel count only as NCCL_MIN_NCHANNELS equal to
NCCL_MAX_NCHANNELS (``plugin_choice``). Pure: no study, no files.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuner.nccl import ALGORITHMS, PROTOCOLS, NcclEnvError, parse_selection
from tuner.probe.run import ProbeResult
from tuner.probe.screen import ProbeComparison, compare_probe

MAX_BYTES = 4294967295
"""The largest max_bytes the plugin's README documents ("covers all sizes")."""
ROW_VARIABLES = frozenset({"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"})
"""The variables whose effect one plugin row can reproduce."""
PLUGIN_ALGORITHMS = {
    "tree": "tree",
    "ring": "ring",
    "collnetdirect": "collnet_direct",
    "collnetchain": "collnet_chain",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "pat": "pat",
}
"""tuner.nccl's algorithm names -> the plugin's spelling (its README's list)."""
ASSUMED_ALGORITHM = "ring"
"""A row must name an algorithm; a setting that fixes only the protocol gets ring, NCCL's
usual all-reduce algorithm within one node (the probe runs on one), and the table says so."""


@dataclass(frozen=True)
class PluginChoice:
    """What one row sets: the plugin's algorithm and protocol names, and channels."""

    algorithm: str
    protocol: str
    channels: int
    """-1: NCCL's own channel count."""
    algorithm_assumed: bool = False
    """The setting left the algorithm to NCCL; the row names ASSUMED_ALGORITHM."""


@dataclass(frozen=True)
class SizeChoice:
    """The decision at one probed size."""

    size: int
    default_us: float
    key: str | None
    """The winning setting's probe key (its NCCL environment), None: keep NCCL's choice."""
    choice: PluginChoice | None
    comparison: ProbeComparison | None
    candidates: int
    """How many probed settings a row could express, compared at this size."""


@dataclass(frozen=True)
class SizeRange:
    """One row's bytes, both ends included (as the plugin compares them)."""

    min_bytes: int
    max_bytes: int
    choice: PluginChoice
    sizes: tuple[int, ...]
    """The probed sizes inside, whose winner this is."""


def plugin_choice(env: Mapping[str, str], default_env: Mapping[str, str]) -> PluginChoice | None:
    """The row that reproduces this setting, or None when it changes something a row
    cannot set (any other variable, several protocols or algorithms, a channel range)."""
    changed = {k for k in set(env) | set(default_env) if env.get(k) != default_env.get(k)}
    if not changed or not changed <= ROW_VARIABLES:
        return None
    try:
        protos = _allreduce_set(env, "NCCL_PROTO", PROTOCOLS)
        algos = _allreduce_set(env, "NCCL_ALGO", ALGORITHMS)
    except NcclEnvError:
        return None  # NCCL rejects it: the probe failed, and no row can say it either
    if protos is None or len(protos) != 1 or (algos is not None and len(algos) != 1):
        return None
    channels = -1
    low, high = env.get("NCCL_MIN_NCHANNELS"), env.get("NCCL_MAX_NCHANNELS")
    if {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"} & changed:
        if low is None or high is None or not _same_int(low, high):
            return None  # a row sets one count, not a range
        channels = int(low.strip(), 0)
    algorithm = ASSUMED_ALGORITHM if algos is None else PLUGIN_ALGORITHMS[next(iter(algos))]
    return PluginChoice(algorithm, next(iter(protos)), channels, algos is None)


def per_size_choices(
    results: Mapping[str, ProbeResult],
    choices: Mapping[str, PluginChoice],
    default_key: str,
    sizes: Sequence[int],
    *,
    confidence: float,
) -> list[SizeChoice]:
    """At each size, the fastest setting of ``choices`` significantly faster than the
    default's; a size the default's probe lacks (an older study) is left out."""
    default = results[default_key]
    out = []
    for size in sorted(set(sizes)):
        base = default.samples.get(size)
        if base is None or len(base) < 2:
            continue
        best: tuple[str, ProbeComparison] | None = None
        compared = 0
        for key in sorted(choices):
            samples = results[key].samples.get(size) if key in results else None
            if samples is None or len(samples) < 2:
                continue
            compared += 1
            cmp = compare_probe(samples, base, size=size, confidence=confidence)
            if cmp.verdict == "faster" and (best is None or cmp.us < best[1].us):
                best = (key, cmp)
        out.append(
            SizeChoice(
                size=size,
                default_us=math.fsum(base) / len(base),
                key=None if best is None else best[0],
                choice=None if best is None else choices[best[0]],
                comparison=None if best is None else best[1],
                candidates=compared,
            )
        )
    return out


def size_ranges(decisions: Sequence[SizeChoice]) -> list[SizeRange]:
    """Contiguous byte ranges of the sizes with a winner, neighbours of the same choice
    merged. A probed size owns the bytes up to the geometric mean of it and the next
    (the midpoint on the log scale sizes are probed on); the smallest reaches down to 0
    and the largest up to MAX_BYTES. Sizes with no winner have no range: NCCL decides."""
    ordered = sorted(decisions, key=lambda d: d.size)
    out: list[SizeRange] = []
    for i, decision in enumerate(ordered):
        low = 0 if i == 0 else _boundary(ordered[i - 1].size, decision.size) + 1
        high = MAX_BYTES if i == len(ordered) - 1 else _boundary(decision.size, ordered[i + 1].size)
        if decision.choice is None:
            continue
        last = out[-1] if out else None
        if last is not None and last.choice == decision.choice and last.max_bytes + 1 == low:
            out[-1] = SizeRange(last.min_bytes, high, last.choice, (*last.sizes, decision.size))
        else:
            out.append(SizeRange(low, high, decision.choice, (decision.size,)))
    return out


def _boundary(smaller: int, larger: int) -> int:
    """The last byte count owned by ``smaller``: below the geometric mean of the two."""
    return max(smaller, min(larger - 1, math.isqrt(smaller * larger)))


def _allreduce_set(
    env: Mapping[str, str], var: str, universe: tuple[str, ...]
) -> frozenset[str] | None:
    raw = env.get(var)
    return None if raw is None else parse_selection(var, raw, universe).for_function("allreduce")


def _same_int(a: str, b: str) -> bool:
    try:
        return int(a.strip(), 0) == int(b.strip(), 0) > 0
    except ValueError:
        return False
