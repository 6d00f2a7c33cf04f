"""The phases of a server's load, read from its log: weights, torch.compile, CUDA graphs, the rest.

A launch's seconds to healthy are split by vLLM's own log lines (docs/launcher.md, "The
phases of a load", lists them per version and what is not seen):

- weights: ``Model loading took 7.33 GiB and 5.49 seconds`` (V1; ``GiB memory and`` in
  newer versions; ``Loading model weights took 8.41 GB and 81.8 seconds`` in V0), which
  covers building the model, reading (or, with ``--load-format dummy``, drawing) its weights
  and processing them; without it (the CPU build prints none) ``Initializing model took``
  plus ``Loading weights took``;
- torch.compile: ``torch.compile takes 34.76 s in total`` (``took`` in newer versions), else
  its parts (``Dynamo bytecode transform time``, ``Compiling a graph for ... takes``,
  ``Directly load the compiled graph(s) ... took``), else ``torch.compile and initial
  profiling/warmup run together took``; on the CPU build, which prints none of these, the
  time between ``Warming up model for the compilation...`` and ``Warming up done.`` (from
  the lines' timestamps, whole seconds);
- CUDA graphs: ``Graph capturing finished in 4 secs`` (whole seconds);
- the rest: the seconds to healthy less the phases found (imports, processes starting,
  memory profiling, the KV cache, the API server).

Beside the phases, the size of the KV cache the load left: ``GPU KV cache size: 75,840 tokens``
(V1; the engine core prints it once per engine) or, from V0, ``# GPU blocks: 22982, # CPU
blocks: 6241`` (``# cuda blocks: 7191`` in 0.8's V0); the smallest one printed, since a request
must fit one engine's cache. And what the weights were read from, as vLLM (0.32, a
safetensors load) saw it: ``Filesystem type for checkpoints: EXT4. Checkpoint size: 509.44
GiB. Available RAM: 430.00 GiB.`` (the first process's; tuner/study/facts/load_explained.py
explains the load with it).

Each process (the ``pid=`` of its prefix: a TP rank, the engine core; none for V0's first
rank) adds up its own lines of a phase (a drafter compiled after the backbone); a phase
counts once, at its slowest process, since the ranks load side by side. A line is found
wherever its prefixes end (``(EngineCore_DP0 pid=1)``, ``(VllmWorker rank=0 pid=2)``,
Ray's ``[repeated 7x across cluster]`` after it). Pure text functions: a log that says none
of this gives phases with nothing found, never an error.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tuner.launcher.progress import _ANSI

PHASES: Final = ("weights", "compile", "cuda_graphs")
"""The phases read from the log, in the order a load goes through them."""

PHASE_LABELS: Final = {
    "weights": "weights",
    "compile": "torch.compile",
    "cuda_graphs": "CUDA graphs",
    "rest": "the rest",
}

NEEDLES: Final = (
    "took",
    "takes",
    "finished in",
    "transform time",
    "Warming up",
    "KV cache size",
    "GPU blocks",
    "cuda blocks",
    "Filesystem type for checkpoints",
)
"""Every line the parser reads contains one of these: a reader may keep only those lines."""

_NUM = r"(\d+(?:\.\d+)?)"
_WEIGHTS_TOTAL = re.compile(
    rf"(?:Model loading|Loading model weights) took [\d.]+ ?Gi?B(?: memory)? and {_NUM} ?s"
)
_WEIGHTS_READ = re.compile(rf"Loading weights took {_NUM} ?s")
_MODEL_INIT = re.compile(rf"Initializing model took {_NUM} ?s")
_COMPILE_TOTAL = re.compile(rf"torch\.compile (?:takes|took) {_NUM} ?s in total")
_COMPILE_TOGETHER = re.compile(
    rf"torch\.compile and initial profiling/warmup run together took {_NUM} ?s"
)
_COMPILE_PART = re.compile(
    rf"Dynamo bytecode transform time: {_NUM} ?s"
    rf"|Compiling a graph for .* takes {_NUM} ?s"
    rf"|Directly load the compiled graph\(s\) for .* from the cache, took {_NUM} ?s"
)
_COMPILE_CACHED = re.compile(r"Directly load (?:the compiled graph|AOT compilation)")
_CPU_WARMUP_START = re.compile(r"Warming up model for the compilation")
_CPU_WARMUP_END = re.compile(r"Warming up done")
_GRAPHS = re.compile(rf"Graph capturing finished in {_NUM} ?(?:secs?|s)\b")
_KV_TOKENS = re.compile(r"GPU KV cache size: (\d[\d,]*) tokens")
_KV_BLOCKS = re.compile(r"# (?:GPU|cuda) blocks: (\d+)")
_CHECKPOINT = re.compile(
    rf"Filesystem type for checkpoints: (\S+)\. Checkpoint size: {_NUM} GiB\. "
    rf"Available RAM: {_NUM} GiB"
)
# The process of a line: the last "pid=N" (Ray adds ", ip=...") before its message.
_PID = re.compile(r"\bpid=(\d+)(?:,\s*ip=([^\s)]+))?")
# vLLM's "INFO 11-29 11:10:00 [file.py:12]": month-day hours:minutes:seconds.
_STAMP = re.compile(r"\b(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})\b")


@dataclass(frozen=True)
class LoadPhases:
    """Seconds of each phase of one load (None: the log did not say), and to healthy."""

    weights_s: float | None = None
    compile_s: float | None = None
    cuda_graphs_s: float | None = None
    healthy_s: float | None = None
    """Start to healthy, as the launcher measured it (None: never healthy, or not given)."""
    processes: int = 0
    """Processes that reported a phase (the TP ranks, or the engine core)."""
    compile_cached: bool = False
    """torch.compile loaded its graphs from vLLM's cache (a warm cache: compile is cheap)."""
    kv_cache_tokens: int | None = None
    """Tokens the KV cache holds, as V1 prints it (None: the log did not say)."""
    kv_cache_blocks: int | None = None
    """Blocks of the KV cache, as V0 prints it (tokens: times the block size, 16 by default)."""
    checkpoint_gib: float | None = None
    """The checkpoint's size as vLLM summed it before reading (None: the log did not say)."""
    checkpoint_fs: str | None = None
    """The filesystem vLLM found the checkpoint on, lower case (``ext4``, ``nfs``, ``unknown``)."""
    ram_available_gib: float | None = None
    """The RAM available when vLLM began reading the weights (the page cache counts)."""

    def seconds(self, phase: str) -> float | None:
        """The seconds of ``phase`` (one of PHASES, or "rest")."""
        if phase == "rest":
            return self.rest_s
        value: float | None = getattr(self, f"{phase}_s")
        return value

    @property
    def found(self) -> tuple[str, ...]:
        """The phases the log said, in PHASES' order."""
        return tuple(p for p in PHASES if self.seconds(p) is not None)

    @property
    def said_anything(self) -> bool:
        """A phase or the KV cache's size: something worth storing."""
        return (
            bool(self.found)
            or self.kv_cache_tokens is not None
            or self.kv_cache_blocks is not None
            or self.checkpoint_gib is not None
        )

    @property
    def rest_s(self) -> float | None:
        """Seconds to healthy less the phases found (never below 0); None without them."""
        if self.healthy_s is None:
            return None
        parts = sum(self.seconds(p) or 0.0 for p in PHASES)
        return max(0.0, self.healthy_s - parts)

    def with_healthy(self, healthy_s: float | None) -> LoadPhases:
        return dataclasses.replace(self, healthy_s=healthy_s)

    def to_json(self) -> dict[str, Any]:
        """As stored in ``tuner_launches.load_phases`` (``rest_s`` and ``found`` included)."""
        return {
            "weights_s": _rounded(self.weights_s),
            "compile_s": _rounded(self.compile_s),
            "cuda_graphs_s": _rounded(self.cuda_graphs_s),
            "rest_s": _rounded(self.rest_s),
            "healthy_s": _rounded(self.healthy_s),
            "found": list(self.found),
            "processes": self.processes,
            "compile_cached": self.compile_cached,
            "kv_cache_tokens": self.kv_cache_tokens,
            "kv_cache_blocks": self.kv_cache_blocks,
            "checkpoint_gib": self.checkpoint_gib,
            "checkpoint_fs": self.checkpoint_fs,
            "ram_available_gib": self.ram_available_gib,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> LoadPhases | None:
        """Back from ``to_json``; None for None or a value that is not a mapping."""
        if not isinstance(data, Mapping):
            return None
        return cls(
            weights_s=_number(data.get("weights_s")),
            compile_s=_number(data.get("compile_s")),
            cuda_graphs_s=_number(data.get("cuda_graphs_s")),
            healthy_s=_number(data.get("healthy_s")),
            processes=int(_number(data.get("processes")) or 0),
            compile_cached=bool(data.get("compile_cached")),
            kv_cache_tokens=_count(data.get("kv_cache_tokens")),
            kv_cache_blocks=_count(data.get("kv_cache_blocks")),
            checkpoint_gib=_number(data.get("checkpoint_gib")),
            checkpoint_fs=fs if isinstance(fs := data.get("checkpoint_fs"), str) else None,
            ram_available_gib=_number(data.get("ram_available_gib")),
        )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number >= 0 else None


@dataclass
class _Process:
    """What one process's lines said, before the precedence of each phase is applied."""

    weights_total: float | None = None
    weights_read: float | None = None
    model_init: float | None = None
    compile_total: float | None = None
    compile_parts: float | None = None
    compile_together: float | None = None
    cpu_warmup: float | None = None
    warmup_started: dt.datetime | None = None
    cuda_graphs: float | None = None
    cached: bool = False

    def add(self, name: str, seconds: float) -> None:
        setattr(self, name, (getattr(self, name) or 0.0) + seconds)

    def said_any(self) -> bool:
        return any(v is not None for v in (self.weights(), self.compile(), self.cuda_graphs))

    def weights(self) -> float | None:
        if self.weights_total is not None:
            return self.weights_total
        if self.weights_read is None and self.model_init is None:
            return None
        return (self.weights_read or 0.0) + (self.model_init or 0.0)

    def compile(self) -> float | None:
        for value in (
            self.compile_total,
            self.compile_parts,
            self.compile_together,
            self.cpu_warmup,
        ):
            if value is not None:
                return value
        return None


def load_phases(lines: Iterable[str], *, healthy_s: float | None = None) -> LoadPhases:
    """The phases of the load that ``lines`` (a server log's, in order) describe."""
    processes: dict[str, _Process] = {}
    kv_tokens: list[int] = []
    kv_blocks: list[int] = []
    checkpoint: re.Match[str] | None = None
    for raw in lines:
        if not any(needle in raw for needle in NEEDLES):
            continue
        text = _ANSI.sub("", raw)
        _read_line(text, processes)
        if (tokens := _KV_TOKENS.search(text)) is not None:
            kv_tokens.append(int(tokens[1].replace(",", "")))
        if (blocks := _KV_BLOCKS.search(text)) is not None:
            kv_blocks.append(int(blocks[1]))
        if checkpoint is None:
            checkpoint = _CHECKPOINT.search(text)
    said = [p for p in processes.values() if p.said_any()]
    return LoadPhases(
        weights_s=_slowest(p.weights() for p in said),
        compile_s=_slowest(p.compile() for p in said),
        cuda_graphs_s=_slowest(p.cuda_graphs for p in said),
        healthy_s=healthy_s,
        processes=len(said),
        compile_cached=any(p.cached for p in processes.values()),
        kv_cache_tokens=min(kv_tokens, default=None),
        kv_cache_blocks=min(kv_blocks, default=None),
        checkpoint_gib=float(checkpoint[2]) if checkpoint else None,
        checkpoint_fs=checkpoint[1].lower() if checkpoint else None,
        ram_available_gib=float(checkpoint[3]) if checkpoint else None,
    )


def _slowest(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return max(found) if found else None


def _read_line(text: str, processes: dict[str, _Process]) -> None:
    for pattern, name in (
        (_WEIGHTS_TOTAL, "weights_total"),
        (_WEIGHTS_READ, "weights_read"),
        (_MODEL_INIT, "model_init"),
        (_COMPILE_TOTAL, "compile_total"),
        (_COMPILE_TOGETHER, "compile_together"),
        (_COMPILE_PART, "compile_parts"),
        (_GRAPHS, "cuda_graphs"),
    ):
        match = pattern.search(text)
        if match is not None:
            seconds = float(next(g for g in match.groups() if g is not None))
            _process(text, match.start(), processes).add(name, seconds)
            break
    cached = _COMPILE_CACHED.search(text)
    if cached is not None:
        _process(text, cached.start(), processes).cached = True
    for pattern, starts in ((_CPU_WARMUP_START, True), (_CPU_WARMUP_END, False)):
        match = pattern.search(text)
        if match is None:
            continue
        stamp = _STAMP.search(text, 0, match.start())
        if stamp is None:
            continue
        proc = _process(text, match.start(), processes)
        at = _timestamp(stamp)
        if starts:
            proc.warmup_started = at
        elif proc.warmup_started is not None and at is not None:
            if at < proc.warmup_started:  # the stamps have no year: it turned in between
                at = at.replace(year=at.year + 1)
            proc.add("cpu_warmup", (at - proc.warmup_started).total_seconds())
            proc.warmup_started = None


def _process(text: str, end: int, processes: dict[str, _Process]) -> _Process:
    pids = _PID.findall(text, 0, end)
    key = "@".join(pids[-1]) if pids else ""
    return processes.setdefault(key, _Process())


def _timestamp(stamp: re.Match[str]) -> dt.datetime | None:
    month, day, hour, minute, second = (int(g) for g in stamp.groups())
    try:  # any leap year, so that 02-29 is a date
        return dt.datetime(2024, month, day, hour, minute, second)
    except ValueError:
        return None
