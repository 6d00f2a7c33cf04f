"""`tuner best`'s objectives and limits: what was optimised, and each candidate's limits.

``objectives`` lists what the study optimises (one entry, or one per item of
``objectives:``); ``limits_answer`` judges the baseline, the best and the recommended configuration
against ``objective.subject_to`` (tuner/study/facts/feasibility.py) and names the configurations
the limits left out that beat the recommendation on the objective: which limit each broke,
and by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tuner.space.objectives import study_objectives
from tuner.space.spec import Space
from tuner.study.facts import analysis

CANDIDATES = ("baseline", "best", "recommended")


def objectives(space: Space) -> list[dict[str, Any]]:
    """The study's objectives as `tuner best --format json` lists them."""
    return [o.to_json() for o in study_objectives(space.spec)]


@dataclass(frozen=True)
class LeftOut:
    """A configuration better on the objective than the recommendation, but not allowed."""

    trial: int | None
    changed: dict[str, Any]
    value: float
    verdict: str
    checks: list[dict[str, Any]]
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "changed": self.changed,
            "value": self.value,
            "verdict": self.verdict,
            "constraints": self.checks,
        }


@dataclass(frozen=True)
class LimitsAnswer:
    """The limits, each candidate judged against them, and what they left out."""

    limits: tuple[str, ...]
    per_candidate: dict[str, list[dict[str, Any]]]
    left_out: tuple[LeftOut, ...]
    note: str | None
    """Set when no configuration tried meets the limits."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"limits": list(self.limits), **self.per_candidate}
        out["left_out"] = [c.to_json() for c in self.left_out]
        if self.note is not None:
            out["note"] = self.note
        return out

    def lines(self, metric: str) -> list[str]:
        """What the table view prints below the table."""
        if not self.limits:
            return []
        out = [f"Limits: {', '.join(self.limits)}."]
        for label in CANDIDATES:
            checks = self.per_candidate.get(label)
            if checks:
                out.append(f"  {label}: " + "; ".join(_check_text(c) for c in checks))
        for c in self.left_out:
            out.append(f"  left out: {c.text} ({metric} {c.value:.4g})")
        if self.note is not None:
            out.append(self.note)
        return out


def limits_answer(
    facts: analysis.StudyAnalysis, chosen: dict[str, analysis.ConfigResult | None]
) -> LimitsAnswer:
    """``chosen`` maps each of CANDIDATES to its configuration (or None)."""
    limits = tuple(facts.space.spec.objective.subject_to)
    per_candidate: dict[str, list[dict[str, Any]]] = {}
    for label in CANDIDATES:
        config = chosen.get(label)
        judged = facts.limit_checks.get(config.config_hash) if config is not None else None
        per_candidate[label] = [c.to_json() for c in judged.checks] if judged else []
    recommended = chosen.get("recommended")
    sign = 1.0 if facts.direction == "maximize" else -1.0
    left_out = []
    for config in sorted(facts.configs.values(), key=lambda c: -sign * c.estimate.mean):
        judged = facts.limit_checks.get(config.config_hash)
        if judged is None or judged.status == "feasible":
            continue
        if recommended is not None and sign * config.estimate.mean <= sign * (
            recommended.estimate.mean
        ):
            continue
        trial = config.trials[0] if config.trials else None
        what = " ".join(f"{k}={v}" for k, v in config.changed.items()) or "defaults"
        left_out.append(
            LeftOut(
                trial=trial,
                changed=dict(config.changed),
                value=config.estimate.mean,
                verdict=judged.status,
                checks=[c.to_json() for c in judged.checks],
                text=f"trial {trial} [{what}]: {judged.describe()}",
            )
        )
    note = None
    if limits and facts.configs and not any(facts.eligible(c) for c in facts.configs.values()):
        note = (
            f"no configuration tried meets the limits ({', '.join(limits)}): "
            f"{len(facts.configs)} measured"
        )
    return LimitsAnswer(limits, per_candidate, tuple(left_out), note)


def _check_text(check: dict[str, Any]) -> str:
    value = check["value"]
    shown = "no value" if value is None else f"{value:,.4g}"
    excess = check["excess"]
    if excess is None:
        over = " (a level had no successful request)"
    elif excess > 0 and math.isfinite(excess):
        over = f" ({excess:+.1%} over)"
    else:
        over = ""
    return f"{check['limit']}: {shown}{over}, {check['verdict']}"
