"""`tuner trials` and `tuner show N`: the study's trials one line each, and one trial in full.

``trials_rows`` joins each optuna trial with its stored launch (state, role, changed
params, objective, load time, why it failed); ``trial_detail`` gathers one launch
with its levels and the study's inventory. The ``print_*`` functions render them
with rich.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tuner.errors import ConfigError, StoreError
from tuner.launcher.failure_cause import words
from tuner.launcher.load_phases import PHASE_LABELS, LoadPhases
from tuner.space.settings import changed_from_defaults
from tuner.space.spec import Scalar
from tuner.storage.tables import LaunchRow, LevelRow
from tuner.study import attrs
from tuner.study.attrs import HOST as HOST_ATTR
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.attrs import REASON as REASON_ATTR
from tuner.study.attrs import ROLE as ROLE_ATTR
from tuner.study.attrs import SEARCH
from tuner.study.run.reader import trial_views
from tuner.views.best_failures import failures_answer
from tuner.views.best_topology import topology_answer
from tuner.views.study_access import StoredStudy, open_study


@dataclass(frozen=True)
class TrialRow:
    """One optuna trial with the facts of its launch (None where it never launched)."""

    number: int
    state: str
    """optuna's state in lower case: complete, fail, pruned, running, waiting."""
    role: str
    changed: Mapping[str, Scalar]
    """The params not at ``default``."""
    value: float | None
    stderr: float | None
    seconds_to_healthy: float | None
    reason: str | None
    """Why the trial failed or was pruned, as the sweep or the launch recorded it."""
    host: str | None = None
    """The host it ran on (several share a study on PostgreSQL: docs/distributed.md)."""
    fidelity: str | None = None
    """``screen`` or ``full`` (None: not launched, or a study from before screening)."""
    cause: str | None = None
    """Why its launch failed, as the search learns from it (launcher/failure_cause.py)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "state": self.state,
            "role": self.role,
            "changed": dict(self.changed),
            "value": self.value,
            "stderr": self.stderr,
            "seconds_to_healthy": self.seconds_to_healthy,
            "reason": self.reason,
            "host": self.host,
            "fidelity": self.fidelity,
            "failure_cause": self.cause,
        }


def trials_rows(storage: str, study: str) -> list[TrialRow]:
    """One row per optuna trial, in trial order."""

    return _rows(open_study(storage, study), study)


def _rows(opened: StoredStudy, study: str) -> list[TrialRow]:
    launches = {r.trial_number: r for r in opened.store.launches(study)}
    screening = opened.space.spec.screening is not None
    rows = []
    for t in opened.optuna_study.get_trials(deepcopy=False):
        params = t.user_attrs.get(PARAMS_ATTR) or {}
        launch = launches.get(t.number)
        rows.append(
            TrialRow(
                number=t.number,
                state=t.state.name.lower(),
                role=t.user_attrs.get(ROLE_ATTR, SEARCH),
                changed=changed_from_defaults(params),
                # The launch's own mean (optuna's value of a full launch in a screening study
                # is on the screening scale); several objectives: the first.
                value=launch.objective_mean
                if screening and launch is not None and launch.objective_mean is not None
                else (t.values[0] if t.values else None),
                stderr=launch.objective_se if launch else None,
                seconds_to_healthy=launch.seconds_to_healthy if launch else None,
                reason=t.user_attrs.get(REASON_ATTR) or (launch.reason if launch else None),
                host=launch.host if launch else t.user_attrs.get(HOST_ATTR),
                fidelity=(launch.fidelity or attrs.FULL) if launch else None,
                cause=t.user_attrs.get(attrs.FAILURE_CAUSE),
            )
        )
    return rows


def print_trials(storage: str, study: str, console: Console) -> None:
    """The table of `tuner trials`, then the settings skipped on the study's GPUs."""
    opened = open_study(storage, study)
    rows = _rows(opened, study)
    # A host column only when several hosts worked on the study.
    several = len({r.host for r in rows if r.host is not None}) > 1
    # A fidelity column only in a study with screening launches (they search, never decide).
    screened = any(r.fidelity == attrs.SCREEN for r in rows)
    table = Table(title=f"trials of {study}")
    columns = ["#", "state", "role", "value", "± s.e.", "load s", "changed params / reason"]
    first = [*columns[:3], *(["fidelity"] if screened else []), *(["host"] if several else [])]
    for col in first:
        table.add_column(col, overflow="fold")
    for col in columns[3:]:
        table.add_column(col, overflow="fold")
    for r in rows:
        changed = " ".join(f"{k}={v}" for k, v in r.changed.items()) or "(defaults)"
        # Escaped: a reason quotes the server's log, whose "[...]" rich would take for markup.
        detail = escape(changed)
        if r.state != "complete":
            why = f"{words(r.cause)}: {r.reason or ''}" if r.cause else r.reason or ""
            detail += f"  [red]{escape(why)}[/]"
        table.add_row(
            str(r.number),
            r.state,
            r.role,
            *([r.fidelity or "-"] if screened else []),
            *([r.host or "-"] if several else []),
            f"{r.value:.4g}" if r.value is not None else "-",
            f"{r.stderr:.2g}" if r.stderr is not None else "-",
            f"{r.seconds_to_healthy:.1f}" if r.seconds_to_healthy is not None else "-",
            detail,
        )
    console.print(table)
    taught = failures_answer(trial_views(opened.optuna_study), opened.space.spec)
    for line in taught.lines() if taught is not None else ():
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    answer = topology_answer(opened.optuna_study.user_attrs)
    for skipped in answer.skipped if answer is not None else ():
        console.print(skipped.sentence(), highlight=False, markup=False, soft_wrap=True)


@dataclass(frozen=True)
class TrialDetail:
    """Everything stored about one trial's launch, and the inventory of its study."""

    launch: LaunchRow
    levels: tuple[LevelRow, ...]
    inventory: Mapping[str, Any] | None
    """The study's stored Inventory.to_dict(), if one was taken."""
    earlier: tuple[LaunchRow, ...] = ()
    """The trial's launches before ``launch``: failed ones whose port was taken."""


def trial_detail(storage: str, study: str, number: int) -> TrialDetail:
    """The launch of trial ``number``; StoreError when that trial never launched a server."""
    opened = open_study(storage, study)
    require_trial(opened, study, number)
    launches = opened.store.launches_for_trial(study, number)
    if not launches:
        raise StoreError(
            f"trial {number} of {study!r} never launched a server (see `tuner trials`)"
        )
    launch = launches[-1]
    row = opened.store.study(study)
    return TrialDetail(
        launch=launch,
        levels=tuple(opened.store.levels(launch.id)),
        inventory=row.inventory if row else None,
        earlier=tuple(launches[:-1]),
    )


def require_trial(opened: StoredStudy, study: str, number: int) -> None:
    """ConfigError, with the numbers there are, when the study has no trial ``number``."""
    numbers = sorted(t.number for t in opened.optuna_study.get_trials(deepcopy=False))
    if number in numbers:
        return
    if not numbers:
        there = "it has no trial yet"
    elif numbers == list(range(numbers[0], numbers[-1] + 1)):
        there = (
            f"its trials are {numbers[0]} to {numbers[-1]}"
            if len(numbers) > 1
            else f"its one trial is {numbers[0]}"
        )
    else:
        there = f"its trials are {', '.join(map(str, numbers))}"
    raise ConfigError(f"{study!r} has no trial {number}: {there} (see `tuner trials`)")


LEVEL_COLUMNS = (
    "round",
    "conc",
    "done",
    "err",
    "tok/s",
    "ttft p50",
    "tpot p50",
    "itl p99",
    "e2el p99",
    "flag",
)


def print_trial(storage: str, study: str, number: int, console: Console) -> None:
    """`tuner show N`: command, env, levels, cleanup, log tail, and the inventory."""
    detail = trial_detail(storage, study, number)
    launch = detail.launch
    console.print(
        f"[bold]Trial {number}[/] ({launch.role}) status {launch.status}"
        + (f": {escape(launch.reason)}" if launch.reason else "")
    )
    console.print(f"command: {shlex.join(launch.argv)}", highlight=False, soft_wrap=True)
    console.print(
        f"env: {' '.join(f'{k}={v}' for k, v in launch.env.items()) or '-'}",
        highlight=False,
        soft_wrap=True,
    )
    if launch.unset_env:
        console.print(f"unset: {' '.join(launch.unset_env)}", highlight=False)
    for before in detail.earlier:
        console.print(
            f"an earlier launch of this trial on port {before.port}: {before.status}"
            + (f": {escape(before.reason)}" if before.reason else ""),
            highlight=False,
        )
    healthy = (
        "never healthy"
        if launch.seconds_to_healthy is None
        else f"healthy after {launch.seconds_to_healthy:.1f} s"
    )
    console.print(f"pid {launch.pid or '-'} on {launch.host}; {healthy}; log {launch.log_path}")
    console.print(load_line(launch), highlight=False)
    if detail.levels:
        console.print(_levels_table(detail.levels))
    if launch.cleanup:
        console.print(
            f"cleanup: {'clean' if launch.cleanup_ok else 'INCOMPLETE'} "
            f"{'; '.join(launch.cleanup.get('problems') or [])}"
        )
    if launch.log_tail:
        console.print("[bold]log tail[/]")
        console.print("\n".join(launch.log_tail.splitlines()[-20:]), markup=False, highlight=False)
    if detail.inventory:
        from tuner.telemetry import render_inventory_dict

        console.print(render_inventory_dict(detail.inventory))


def load_line(launch: LaunchRow) -> str:
    """The launch's fidelity, the phases of its load and its KV cache, as its log told them, e.g.
    "load (full): weights 34.1 s, torch.compile 0.9 s, CUDA graphs 0.4 s, the rest 0.6 s;
    KV cache 75,840 tokens"."""
    fidelity = launch.fidelity or "full"
    phases = LoadPhases.from_json(launch.load_phases)
    kv = f"; {kv_cache_text(phases)}" if phases is not None and kv_cache_text(phases) else ""
    if phases is None or not phases.found:
        return f"load ({fidelity}): the server's log named no phase of it{kv}"
    parts = [
        f"{PHASE_LABELS[p]} {seconds:.1f} s"
        for p in (*phases.found, "rest")
        if (seconds := phases.seconds(p)) is not None
    ]
    notes = []
    if phases.processes > 1:
        notes.append(f"the slowest of {phases.processes} processes")
    if phases.compile_cached:
        notes.append("compiled graphs from the cache")
    if phases.healthy_s is None:
        notes.append("never healthy")
    return (
        f"load ({fidelity}): {', '.join(parts)}" + (f" ({'; '.join(notes)})" if notes else "") + kv
    )


def kv_cache_text(phases: LoadPhases) -> str:
    """The KV cache's size as the server's log gave it, e.g. "KV cache 75,840 tokens"; "" if not."""
    if phases.kv_cache_tokens is not None:
        return f"KV cache {phases.kv_cache_tokens:,} tokens"
    if phases.kv_cache_blocks is not None:
        return f"KV cache {phases.kv_cache_blocks:,} blocks"
    return ""


def _levels_table(levels: tuple[LevelRow, ...]) -> Table:
    table = Table(title="levels")
    for col in LEVEL_COLUMNS:
        table.add_column(col)
    for lv in levels:
        s = lv.summary
        table.add_row(
            str(lv.round),
            str(lv.concurrency),
            str(lv.completed),
            str(lv.errors),
            f"{lv.output_throughput or 0:.1f}",
            _ms(s, "ttft_ms", "p50"),
            _ms(s, "tpot_ms", "p50"),
            _ms(s, "itl_ms", "p99"),
            _ms(s, "e2el_ms", "p99"),
            lv.flagged or "",
        )
    return table


def _ms(summary: Mapping[str, Any], family: str, stat: str) -> str:
    value = (summary.get(family) or {}).get(stat)
    return f"{value:.1f}" if isinstance(value, (int, float)) else "-"
