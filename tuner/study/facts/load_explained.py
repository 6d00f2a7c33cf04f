"""Why a full load takes what it takes, in figures and one sentence, with its lever.

From the full launches of the defaults (the baseline's configuration; every full launch
when there is none), their phases' medians (tuner/study/facts/load_costs.py) and the run
host's facts, ``explain_load`` says: the weights' bytes, the read rate the weights phase
reached (bytes / its median seconds), the RAM (available and total) against those bytes,
the filesystem they are read from, a cold first load against warm later ones, and the one
lever most likely to cut it (tuner/study/facts/load_levers.py, its rule and sources).

The figures come from vLLM's own line (``Filesystem type for checkpoints: EXT4. Checkpoint
size: 509.44 GiB. Available RAM: 430.00 GiB.``, stored with each launch's phases) where the
log has it, else from the study's inventory (the model's folder and psutil's memory with
the first healthy server up), so `tuner best` on another machine says the run host's
figures. ``explain_study_load`` reads them for a study: its inventory, and the server's
--help from tuner check's cache (never run here).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from tuner.check.help import help_options, server_help
from tuner.launcher.load_phases import PHASE_LABELS, LoadPhases
from tuner.space.layout import last_value
from tuner.space.model_limits import baseline_argv
from tuner.space.spec import Space
from tuner.storage import LaunchRow, Store
from tuner.study import attrs
from tuner.study.facts.load_costs import load_costs
from tuner.study.facts.load_levers import (
    STRATEGY_FLAG,
    Lever,
    LoadFacts,
    choose_lever,
    secs_text,
)
from tuner.telemetry.weights_disk import model_folder, weights_facts

GIB = 2**30
COLD_RATIO = 1.5
"""A first load's weights this many times slower than the later ones' median read the disk."""


@dataclass(frozen=True)
class LoadHost:
    """What the run host said of the weights and its memory (None: not known)."""

    ram_total: float | None = None
    ram_available: float | None = None
    weights_bytes: float | None = None
    weights_fs: str | None = None

    @classmethod
    def from_inventory(cls, data: Mapping[str, Any] | None) -> LoadHost:
        """From a stored inventory (tuner/telemetry/inventory.py); blanks where it lacks one."""
        data = data or {}

        def number(key: str, scale: float = 1.0) -> float | None:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            return float(value) * scale

        fs = data.get("weights_fs")
        return cls(
            ram_total=number("ram_total_gib", GIB),
            ram_available=number("ram_available_gib", GIB),
            weights_bytes=number("weights_bytes"),
            weights_fs=fs if isinstance(fs, str) else None,
        )

    @classmethod
    def here(cls, space: Space) -> LoadHost:
        """This machine's, now: for a plan whose launch's inventory was not kept."""
        memory = psutil.virtual_memory()
        folder = model_folder(space)
        weights = weights_facts(folder) if folder is not None else None
        return cls(
            ram_total=float(memory.total),
            ram_available=float(memory.available),
            weights_bytes=float(weights.bytes) if weights is not None else None,
            weights_fs=weights.fstype if weights is not None else None,
        )


@dataclass(frozen=True)
class LoadExplained:
    """A full load of the defaults: its figures, its lever (or why none)."""

    facts: LoadFacts
    lever: Lever | None
    no_lever: str = ""

    def sentence(self) -> str:
        """The load in one sentence: what takes longest, the weights against the RAM and
        their filesystem, how they are read, the lever with its figure and source."""
        head, detail = self._state()
        text = f"{head}{self._memory()}" + (f": {detail}" if detail else "")
        lever = self.lever
        if lever is not None:
            caveat = f"; {lever.caveat}" if lever.caveat else ""
            return f"{text}; {lever.change} {lever.effect} ({lever.source}){caveat}"
        return f"{text}; {self.no_lever}" if self.no_lever else text

    def _state(self) -> tuple[str, str]:
        """What the load is (said before the weights' figures) and how they are read."""
        f = self.facts
        rate = f" at {_rate(f.read_rate)}" if f.read_rate is not None else ""
        if f.dominant is not None and f.dominant != "weights" and f.dominant_s is not None:
            took = f"{secs_text(f.dominant_s)} of {secs_text(f.healthy_s)}"
            return f"{PHASE_LABELS[f.dominant]} takes most of a full load ({took})", ""
        cold, warm = f.cold_s, f.warm_s
        if f.fits is False:
            detail = f"every load reads the disk{rate}"
            if cold is not None and warm is not None:  # a part stays cached, the rest is read
                detail += f", the first in {secs_text(cold)}, later ones in {secs_text(warm)}"
            return "the weights do not fit the page cache", detail
        if f.fits and cold is not None and warm is not None:
            return "the weights fit the page cache", (
                f"the first load read them in {secs_text(cold)}, later ones in {secs_text(warm)}"
            )
        if f.fits:
            return "the weights fit the page cache", f"the weights phase reads them{rate}"
        if f.weights_s is None:
            return f"a full load takes {secs_text(f.healthy_s)}; its log names no weights phase", ""
        took = f"{secs_text(f.weights_s)} of a full load's {secs_text(f.healthy_s)}"
        return f"the weights take {took}", f"read{rate}" if rate else ""

    def _memory(self) -> str:
        """(547 GB against 461 GB of available RAM, 512 GB in all; on ext4)."""
        f = self.facts
        parts = []
        if f.weights_bytes is not None:
            ram = []
            if f.ram_available is not None:
                ram.append(f"{_gb(f.ram_available)} of available RAM")
            if f.ram_total is not None and f.ram_total >= (f.ram_available or 0.0):
                ram.append(f"{_gb(f.ram_total)} in all" if ram else f"{_gb(f.ram_total)} of RAM")
            parts.append(_gb(f.weights_bytes) + (f" against {', '.join(ram)}" if ram else ""))
        if f.filesystem is not None:
            parts.append(f"on {f.filesystem}")
        return f" ({'; '.join(parts)})" if parts else ""

    def to_json(self) -> dict[str, Any]:
        f = self.facts
        return {
            **dataclasses.asdict(f),
            "read_rate": f.read_rate,
            "fits": f.fits,
            "lever": dataclasses.asdict(self.lever) if self.lever is not None else None,
            "no_lever": self.no_lever or None,
            "sentence": self.sentence(),
        }


def explain_load(
    rows: Sequence[LaunchRow], host: LoadHost, offers: frozenset[str] | None = None
) -> LoadExplained | None:
    """The defaults' full load explained; None without a healthy full launch whose log
    said a phase of its load.

    ``offers``: the options the server's --help lists (None: not read here)."""
    full = [r for r in rows if r.fidelity != attrs.SCREEN and r.seconds_to_healthy is not None]
    base = next((r.config_hash for r in full if r.role == attrs.BASELINE), None)
    mine = sorted((r for r in full if base is None or r.config_hash == base), key=lambda r: r.id)
    cost = load_costs(mine).full
    if cost is None or not cost.phases:  # no log said a phase: nothing to explain
        return None
    phases = [p for r in mine if (p := LoadPhases.from_json(r.load_phases)) is not None]
    said = [p for p in phases if p.checkpoint_gib is not None]
    size = _median([p.checkpoint_gib * GIB for p in said if p.checkpoint_gib is not None])
    free = _median([p.ram_available_gib * GIB for p in said if p.ram_available_gib is not None])
    weights = [p.weights_s for p in phases if p.weights_s is not None]
    cold = None
    if len(weights) >= 2 and weights[0] > COLD_RATIO * statistics.median(weights[1:]):
        cold = (weights[0], statistics.median(weights[1:]))
    dominant = max(cost.phases, key=lambda k: cost.phases[k]) if cost.phases else None
    facts = LoadFacts(
        launches=cost.launches,
        healthy_s=cost.healthy_s,
        dominant=dominant,
        dominant_s=cost.phases.get(dominant) if dominant is not None else None,
        weights_s=cost.phases.get("weights"),
        weights_bytes=size if size is not None else host.weights_bytes,
        ram_total=host.ram_total,
        ram_available=free if free is not None else host.ram_available,
        filesystem=said[0].checkpoint_fs if said else host.weights_fs,
        strategy=next((v for r in mine if (v := last_value(r.argv or [], (STRATEGY_FLAG,)))), None),
        cold_s=cold[0] if cold else None,
        warm_s=cold[1] if cold else None,
        compile_cached=any(p.compile_cached for p in phases),
    )
    lever, why = choose_lever(facts, offers)
    return LoadExplained(facts, lever, why)


def explain_study_load(
    store: Store, space: Space, rows: Sequence[LaunchRow] | None = None
) -> LoadExplained | None:
    """``explain_load`` of a study: its launches (``rows``, else the store's), its stored
    inventory, and the server's --help as tuner check cached it."""
    found = store.launches(space.study_name) if rows is None else rows
    study = store.study(space.study_name)
    host = LoadHost.from_inventory(study.inventory if study is not None else None)
    return explain_load(found, host, offered_flags(space))


def offered_flags(space: Space) -> frozenset[str] | None:
    """The options the server's --help lists, from tuner check's cache; None when it is
    not cached here (a --help is never run to explain a load: vLLM's imports torch)."""

    def not_run(argv: list[str], env: Mapping[str, str], timeout_s: float) -> tuple[None, str]:
        return None, ""

    argv, env = baseline_argv(space)
    found = server_help(argv, env, read_help=not_run)
    return frozenset(help_options(found.text)) if found.problem is None else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _gb(value: float) -> str:
    return f"{value / 1e9:,.0f} GB" if value >= 10e9 else f"{value / 1e9:.1f} GB"


def _rate(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value / 1e9:.1f} GB/s" if value >= 1e9 else f"{value / 1e6:,.0f} MB/s"
