"""`tuner compare A B`: is trial A's configuration better than trial B's, or within noise?

Each trial stands for its configuration with every launch of it pooled (study.analysis),
and the verdict is the same test the sweep and `tuner best` use (stats.compare).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from tuner import stats
from tuner.errors import StoreError
from tuner.study.facts import analysis
from tuner.views.study_access import open_study
from tuner.views.trials import require_trial


@dataclass(frozen=True)
class CompareSide:
    """One side of the comparison: the trial named, and its configuration's estimate."""

    trial: int
    mean: float
    stderr: float
    launches: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CompareReport:
    """A against B; relative figures are fractions of B's mean (see stats.Comparison)."""

    a: CompareSide
    b: CompareSide
    diff: float
    rel_diff: float
    ci_low: float
    ci_high: float
    verdict: stats.Verdict
    confidence: float
    min_gain: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def compare_report(storage: str, study: str, a: int, b: int) -> CompareReport:
    """Trial ``a`` against trial ``b``; StoreError when either has no completed measurement."""
    opened = open_study(storage, study)
    for number in (a, b):
        require_trial(opened, study, number)
    space = opened.space
    facts = analysis.analyze(opened.store, space)
    by_trial = {n: c for c in facts.configs.values() for n in c.trials}
    missing = [n for n in (a, b) if n not in by_trial]
    if missing:
        raise StoreError(
            f"trial {missing[0]} of {study!r} has no completed measurement (see `tuner trials`)"
        )
    ca, cb = by_trial[a], by_trial[b]
    cmp = facts.compare(ca, cb)
    return CompareReport(
        a=_side(a, ca),
        b=_side(b, cb),
        diff=cmp.diff,
        rel_diff=cmp.rel_diff,
        ci_low=cmp.ci_low,
        ci_high=cmp.ci_high,
        verdict=cmp.verdict,
        confidence=space.spec.stop.confidence,
        min_gain=space.spec.stop.min_gain,
    )


def _side(trial: int, config: analysis.ConfigResult) -> CompareSide:
    return CompareSide(
        trial=trial,
        mean=config.estimate.mean,
        stderr=config.estimate.se,
        launches=len(config.launches),
    )


def print_compare(storage: str, study: str, a: int, b: int, console: Console) -> None:
    """The lines of `tuner compare A B`: both estimates, the difference, the verdict."""
    r = compare_report(storage, study, a, b)
    lines = [
        f"trial {side.trial}: {side.mean:.4g} ± {side.stderr:.2g} ({side.launches} launches)"
        for side in (r.a, r.b)
    ]
    lines.append(
        f"difference A - B: {r.rel_diff:+.2%}, {r.confidence:.0%} interval "
        f"[{r.ci_low:+.2%}, {r.ci_high:+.2%}] (minimum gain {r.min_gain:.1%})"
    )
    suffix = "" if r.verdict == "within noise" else " than B"
    lines.append(f"[bold]verdict: A is {r.verdict}{suffix}[/]")
    console.print("\n".join(lines), highlight=False)
