"""`tuner best` with several objectives: the front of trusted configurations, and why.

``pareto_view`` turns a study's front (tuner/study/facts/pareto.py) into rows: each trusted
configuration with every objective's value and interval, whether it is statistically
non-dominated and by whom it is dominated, and whether it is recommendable (non-dominated,
better than the defaults on one objective, worse on none). ``ParetoView.to_json`` is the
``pareto`` key of `tuner best --format json`; ``table`` is what the text view prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from tuner.space.objectives import Objective, study_objectives
from tuner.space.spec import Scalar
from tuner.stats.pareto import ParetoAnswer
from tuner.study.facts import pareto
from tuner.study.facts.analysis import StudyAnalysis


@dataclass(frozen=True)
class ObjectiveValue:
    """One configuration's estimate of one objective."""

    value: float
    stderr: float
    interval: tuple[float, float] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "stderr": self.stderr,
            "interval": list(self.interval) if self.interval is not None else None,
        }

    def text(self) -> str:
        if self.interval is None:
            return f"{self.value:.4g}"
        return "{:.4g} [{:.4g}, {:.4g}]".format(self.value, *self.interval)


@dataclass(frozen=True)
class ParetoRow:
    """One trusted configuration on the front."""

    trial: int | None
    config: str
    changed: dict[str, Scalar]
    launches: int
    values: tuple[ObjectiveValue, ...]
    dominated_by: tuple[int | None, ...]
    """The first trials of the configurations that dominate it (docs/statistics.md)."""
    recommendable: bool
    recommended: bool
    is_baseline: bool

    @property
    def dominated(self) -> bool:
        return bool(self.dominated_by)

    def cells(self, non_dominated: str) -> list[str]:
        """The row as text: mark (``non_dominated`` when it is, then recommended or
        recommendable), trial, each objective, launches, dominated by, settings."""
        role = "recommended" if self.recommended else "recommendable" if self.recommendable else ""
        mark = " ".join(m for m in ("" if self.dominated else non_dominated, role) if m)
        return [
            mark,
            str(self.trial),
            *(v.text() for v in self.values),
            str(self.launches),
            ", ".join(f"trial {t}" for t in self.dominated_by) or "-",
            " ".join(f"{k}={v}" for k, v in self.changed.items()) or "(defaults)",
        ]

    def to_json(self, objectives: tuple[Objective, ...]) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "config": self.config,
            "changed": dict(self.changed),
            "launches": self.launches,
            "objectives": {
                o.name: v.to_json() for o, v in zip(objectives, self.values, strict=True)
            },
            "dominated": self.dominated,
            "dominated_by": list(self.dominated_by),
            "recommendable": self.recommendable,
            "recommended": self.recommended,
            "baseline": self.is_baseline,
        }


@dataclass(frozen=True)
class ParetoView:
    """The front as `tuner best` shows it, the recommendation and its reason."""

    objectives: tuple[Objective, ...]
    rows: tuple[ParetoRow, ...]
    recommended: str
    reason: str
    keep_defaults: bool

    def to_json(self) -> list[dict[str, Any]]:
        return [row.to_json(self.objectives) for row in self.rows]

    def table(self, study: str, confidence: float) -> Table:
        table = Table(
            title=f"{study}: the front of trusted configurations ({confidence:.0%} intervals; "
            "* statistically non-dominated)"
        )
        for col in ("", "trial", *(f"{o.name} ({o.direction})" for o in self.objectives)):
            table.add_column(col)
        for col in ("launches", "dominated by", "settings"):
            table.add_column(col)
        for row in self.rows:
            table.add_row(*row.cells(non_dominated="*"))
        return table


def pareto_view(facts: StudyAnalysis) -> ParetoView | None:
    """The study's front (None without several objectives or without trusted launches)."""
    if facts.objective_estimates is None:
        return None
    answer = pareto.front(facts)
    if answer is None:
        return None
    return ParetoView(
        objectives=study_objectives(facts.space.spec),
        rows=tuple(_rows(facts, answer)),
        recommended=answer.recommended,
        reason=answer.reason,
        keep_defaults=answer.keep_defaults,
    )


def _rows(facts: StudyAnalysis, answer: ParetoAnswer) -> list[ParetoRow]:
    confidence = facts.space.spec.stop.confidence
    recommendable = set(answer.recommendable)
    rows = []
    for entry in answer.entries:
        config = facts.configs[entry.key]
        values = []
        for i in range(len(study_objectives(facts.space.spec))):
            estimate = pareto.estimate_of(facts, entry.key, i)
            assert estimate is not None  # a candidate has every objective
            low, high = estimate.interval(confidence)
            bounded = math.isfinite(low) and math.isfinite(high)
            values.append(
                ObjectiveValue(estimate.mean, estimate.se, (low, high) if bounded else None)
            )
        rows.append(
            ParetoRow(
                trial=config.trials[0] if config.trials else None,
                config=entry.key,
                changed=dict(config.changed),
                launches=len(config.launches),
                values=tuple(values),
                dominated_by=tuple(
                    facts.configs[k].trials[0] if facts.configs[k].trials else None
                    for k in entry.dominated_by
                ),
                recommendable=entry.key in recommendable,
                recommended=entry.key == answer.recommended,
                is_baseline=config.is_baseline,
            )
        )
    # Non-dominated first, then by the first objective, best first.
    sign = 1.0 if study_objectives(facts.space.spec)[0].direction == "maximize" else -1.0
    rows.sort(key=lambda r: (r.dominated, -sign * r.values[0].value))
    return rows
