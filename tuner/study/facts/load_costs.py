"""What a load costs at each fidelity, from the stored launches, and what screening saves.

Each launch row keeps its seconds to healthy and the phases of its load as the server's
log told them (``tuner_launches.load_phases``, tuner/launcher/load_phases.py): weights,
torch.compile, CUDA graphs and the rest. Per fidelity ("screen", or "full" for full
launches and for older ones that have none), ``load_costs`` counts the launches that became
healthy and takes the median seconds to healthy and of each phase; ``load_costs_sentence``
says it in one line, for the cost plan and the report.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuner.launcher.load_phases import PHASE_LABELS, PHASES, LoadPhases
from tuner.storage import LaunchRow
from tuner.study.attrs import FULL, SCREEN

PARTS = (*PHASES, "rest")
"""The parts of a load, in order: the phases read from the log, then the rest."""


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
class LoadCosts:
    """The load of a full launch and of a screening one (None: no such launch was healthy)."""

    full: FidelityCost | None = None
    screen: FidelityCost | None = None

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
    return LoadCosts(full=costs[FULL], screen=costs[SCREEN])


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

    if costs.full is None:
        assert costs.screen is not None
        return f"screening load {load(costs.screen)}; no full load measured yet"
    text = f"full load {load(costs.full)}"
    if costs.screen is None:
        return text
    text += f"; screening {amount(costs.screen.healthy_s)} {unit}"
    saves = costs.screening_saves
    if saves is None:
        return text
    if saves > 0:
        return f"{text}: screening saves {saves:.0%} of a load"
    return f"{text}: screening saves no time here (its load takes {-saves:.0%} longer)"
