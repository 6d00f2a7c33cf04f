"""What a load costs at each fidelity, from the stored launches, and what screening saves.

Each launch row keeps its seconds to healthy and the phases of its load as the server's
log told them (``tuner_launches.load_phases``, tuner/launcher/load_phases.py): weights,
torch.compile, CUDA graphs and the rest. Per fidelity ("screen", or "full" for full
launches and for older ones that have none), ``load_costs`` counts the launches that became
healthy and takes the median seconds to healthy and of each phase; ``load_costs_sentence``
says it in one line, for the cost plan and the report.

``compile_reuse`` splits the torch.compile phase between a configuration's first launch and
its later ones: tuner gives each configuration one compile cache (``VLLM_CACHE_ROOT:
{study_dir}/vllm-cache/{config}``, ``{config}`` without the fidelity), and vLLM's cache key
leaves the load format out, so a full launch after a screening launch of its configuration
finds its compiled kernels (docs/vllm.md, "Screening and the compile cache").
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuner.launcher.load_phases import PHASE_LABELS, PHASES, LoadPhases
from tuner.storage import LaunchRow
from tuner.study.attrs import FULL, SCREEN

PARTS = (*PHASES, "rest")
"""The parts of a load, in order: the phases read from the log, then the rest."""
MATERIAL_SAVING = 0.2
"""The share of the first compile a warm cache must save to count (CompileReuse.saved_s)."""
CacheKey = tuple[str, tuple[tuple[str, str], ...]]
"""A configuration and the vLLM variables of a launch's env (``cache_key``)."""


@dataclass(frozen=True)
class FidelityCost:
    """The loads of one fidelity: medians over the launches that became healthy."""

    fidelity: str
    launches: int
    """Launches counted: those with a time to healthy."""
    healthy_s: float
    """Median seconds from start to healthy."""
    with_phases: int = 0
    """Of those, launches whose log said at least one phase."""
    phases: Mapping[str, float] = field(default_factory=dict)
    """Median seconds of each part (PARTS) over ``with_phases`` launches; a phase one
    launch's log did not say counts 0 there, one no log said is left out."""

    def to_json(self) -> dict[str, Any]:
        return {
            "fidelity": self.fidelity,
            "launches": self.launches,
            "healthy_s": round(self.healthy_s, 3),
            "with_phases": self.with_phases,
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
        }


@dataclass(frozen=True)
class CompileReuse:
    """torch.compile on a configuration's first launch and on its later ones (medians of the
    compile phase; None: no such launch said one).

    A launch is a later one when an earlier launch of its configuration under the same
    cache key (``cache_key``: either fidelity, unless screening launches have a vLLM
    variable the full ones lack) was healthy before it started: its compiled kernels are
    there.
    """

    first_s: float | None = None
    again_s: float | None = None
    first_share_full: float = 0.0
    """Of the healthy full launches, the share that were the first under their key."""
    first_share_screen: float = 0.0
    screening_parts: bool = False
    """A configuration's screening launches ran with vLLM variables its full ones lacked
    (``screening.env``, the MoE routing): vLLM keyed their compiles apart, so the full
    launches compiled on their own."""

    @property
    def saved_s(self) -> float | None:
        """What a warm cache saves a launch; 0 below a fifth of the first compile (jitter, not
        a cache: the CPU build's phase is timed in whole seconds, and a warm cache cut it
        to a quarter there); None without both medians."""
        if self.first_s is None or self.again_s is None:
            return None
        saved = self.first_s - self.again_s
        return saved if saved >= MATERIAL_SAVING * self.first_s and saved > 0 else 0.0

    def first_share(self, fidelity: str) -> float:
        return self.first_share_screen if fidelity == SCREEN else self.first_share_full

    def to_json(self) -> dict[str, Any]:
        return {
            "first_s": _round(self.first_s),
            "again_s": _round(self.again_s),
            "saved_s": _round(self.saved_s),
            "first_share": {
                FULL: round(self.first_share_full, 4),
                SCREEN: round(self.first_share_screen, 4),
            },
            "screening_parts": self.screening_parts,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass(frozen=True)
class LoadCosts:
    """The load of a full launch and of a screening one (None: no such launch was healthy)."""

    full: FidelityCost | None = None
    screen: FidelityCost | None = None
    compile: CompileReuse = field(default_factory=CompileReuse)

    @property
    def measured(self) -> tuple[FidelityCost, ...]:
        """The fidelities with a healthy launch, full first."""
        return tuple(c for c in (self.full, self.screen) if c is not None)

    @property
    def screening_saves(self) -> float | None:
        """The share of a full load's seconds a screening launch saves (its medians; below 0
        when screening loads slower); None without both."""
        if self.full is None or self.screen is None or self.full.healthy_s <= 0:
            return None
        return 1.0 - self.screen.healthy_s / self.full.healthy_s

    def to_json(self) -> dict[str, Any]:
        return {
            FULL: self.full.to_json() if self.full else None,
            SCREEN: self.screen.to_json() if self.screen else None,
            "screening_saves": (
                None if self.screening_saves is None else round(self.screening_saves, 4)
            ),
            "compile": self.compile.to_json(),
        }


def load_costs(rows: Iterable[LaunchRow]) -> LoadCosts:
    """Per fidelity, the median load of the launches among ``rows`` that became healthy."""
    healthy: dict[str, list[float]] = {FULL: [], SCREEN: []}
    phased: dict[str, list[LoadPhases]] = {FULL: [], SCREEN: []}
    for row in rows:
        seconds = row.seconds_to_healthy
        if seconds is None:
            continue
        level = SCREEN if row.fidelity == SCREEN else FULL
        healthy[level].append(seconds)
        phases = LoadPhases.from_json(row.load_phases)
        if phases is not None and phases.found:
            phased[level].append(phases.with_healthy(seconds))
    costs = {
        level: _cost(level, healthy[level], phased[level]) if healthy[level] else None
        for level in (FULL, SCREEN)
    }
    return LoadCosts(full=costs[FULL], screen=costs[SCREEN], compile=compile_reuse(rows))


def compile_reuse(rows: Iterable[LaunchRow]) -> CompileReuse:
    """The compile phase of first and later launches of a configuration (see CompileReuse).

    Launches without a start time or a configuration are left out; a launch that never
    became healthy warms nothing (its compile may not have finished).
    """
    timed = [r for r in rows if r.started_at is not None and r.config_hash]
    warm_from: dict[CacheKey, dt.datetime] = {}  # key -> when a launch under it was healthy
    keys: dict[tuple[str, str], set[CacheKey]] = {}  # (configuration, fidelity) -> its keys
    first: list[float] = []
    again: list[float] = []
    counts = {FULL: [0, 0], SCREEN: [0, 0]}  # fidelity -> [first launches, healthy launches]
    for row in sorted(timed, key=lambda r: r.started_at):
        key = cache_key(row)
        level = SCREEN if row.fidelity == SCREEN else FULL
        keys.setdefault((row.config_hash, level), set()).add(key)
        if row.seconds_to_healthy is None:
            continue
        warmed = warm_from.get(key)
        is_again = warmed is not None and warmed <= row.started_at
        healthy_at = row.started_at + dt.timedelta(seconds=row.seconds_to_healthy)
        if warmed is None or healthy_at < warmed:
            warm_from[key] = healthy_at
        count = counts[level]
        count[0] += not is_again
        count[1] += 1
        phases = LoadPhases.from_json(row.load_phases)
        if phases is not None and phases.compile_s is not None:
            (again if is_again else first).append(phases.compile_s)
    return CompileReuse(
        first_s=statistics.median(first) if first else None,
        again_s=statistics.median(again) if again else None,
        first_share_full=counts[FULL][0] / counts[FULL][1] if counts[FULL][1] else 0.0,
        first_share_screen=counts[SCREEN][0] / counts[SCREEN][1] if counts[SCREEN][1] else 0.0,
        screening_parts=any(
            (config, FULL) in keys and keys[(config, FULL)] != found
            for (config, level), found in keys.items()
            if level == SCREEN
        ),
    )


def cache_key(row: LaunchRow) -> CacheKey:
    """What vLLM's compile cache key can tell apart between launches of one configuration:
    the vLLM variables of its environment (vLLM hashes each one but a few locations;
    ``screening.env``'s ``VLLM_MOE_ROUTING_SIMULATION_STRATEGY`` is one it hashes). The
    load format is not among them, nor is it in the key."""
    env = row.env if isinstance(row.env, Mapping) else {}
    named = sorted((k, str(v)) for k, v in env.items() if k.startswith("VLLM_"))
    return row.config_hash, tuple(named)


def _cost(level: str, healthy: list[float], phased: list[LoadPhases]) -> FidelityCost:
    medians: dict[str, float] = {}
    for part in PARTS:
        if part != "rest" and not any(part in p.found for p in phased):
            continue
        values = [p.seconds(part) or 0.0 for p in phased]
        if values:
            medians[part] = statistics.median(values)
    return FidelityCost(
        fidelity=level,
        launches=len(healthy),
        healthy_s=statistics.median(healthy),
        with_phases=len(phased),
        phases=medians,
    )


def load_costs_sentence(costs: LoadCosts) -> str | None:
    """One line, e.g. "full load 36.0 min (weights 34.1, torch.compile 0.9, CUDA graphs 0.4,
    the rest 0.6); screening 1.9 min: screening saves 95% of a load"; None without a load.

    Minutes when the longer load takes two or more, else seconds; medians over the
    launches counted.
    """
    known = costs.measured
    if not known:
        return None
    minutes = max(c.healthy_s for c in known) >= 120
    unit, scale = ("min", 60.0) if minutes else ("s", 1.0)

    def amount(seconds: float) -> str:
        return f"{seconds / scale:.1f}"

    def load(cost: FidelityCost) -> str:
        text = f"{amount(cost.healthy_s)} {unit}"
        if cost.phases:
            parts = ", ".join(f"{PHASE_LABELS[k]} {amount(v)}" for k, v in cost.phases.items())
            text += f" ({parts})"
        return text

    reuse = costs.compile
    cache = ""
    if reuse.saved_s and reuse.first_s is not None and reuse.again_s is not None:
        cache = (
            f"; torch.compile {amount(reuse.first_s)} {unit} on a configuration's first launch, "
            f"{amount(reuse.again_s)} on its later ones at either fidelity (one compile cache)"
        )
    if costs.full is None:
        assert costs.screen is not None
        return f"screening load {load(costs.screen)}; no full load measured yet{cache}"
    text = f"full load {load(costs.full)}"
    if costs.screen is None:
        return text + cache
    text += f"; screening {amount(costs.screen.healthy_s)} {unit}"
    saves = costs.screening_saves
    if saves is None:
        return text + cache
    if saves > 0:
        return f"{text}: screening saves {saves:.0%} of a load{cache}"
    return f"{text}: screening saves no time here (its load takes {-saves:.0%} longer){cache}"
