"""The answer against the defaults: the recommended configuration's gain over them, and
what "keep the defaults" could have missed.

Both are relative to the baseline and at the study's confidence, so `tuner best` and the
report say the same figures; ``CouldHaveMissed`` bounds the gain a configuration tried
could still hide, so keeping the defaults is never read as "nothing to gain".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tuner import stats
from tuner.study.facts import analysis


@dataclass(frozen=True)
class GainVsBaseline:
    """The recommended configuration against the baseline (relative to the baseline)."""

    rel_diff: float
    ci_low: float
    ci_high: float
    verdict: stats.Verdict

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class CouldHaveMissed:
    """What "keep the defaults" could have missed: no configuration measured beats the
    defaults by more than ``gain_upper`` (a fraction), the largest upper bound of a
    configuration's gain over the baseline at the study's confidence; None when no
    other configuration was measured."""

    gain_upper: float | None
    trial: int | None
    """The configuration whose bound it is (its first trial)."""
    configurations: int
    """Configurations measured besides the defaults."""
    confidence: float

    @property
    def text(self) -> str:
        return f"keep the defaults: {self.clause}"

    @property
    def clause(self) -> str:
        """What could still hide, without 'keep the defaults: '."""
        if self.gain_upper is None:
            return "no other configuration was measured to the end"
        plural = "s" if self.configurations != 1 else ""
        return (
            "no configuration tried beats them by more than "
            f"{max(self.gain_upper, 0.0):.1%} (the upper end of the {self.confidence:.0%} "
            f"interval of trial {self.trial}'s gain, the highest of {self.configurations} "
            f"configuration{plural} measured)"
        )

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "text": self.text}


def could_have_missed(facts: analysis.StudyAnalysis) -> CouldHaveMissed | None:
    """The largest upper bound of a measured configuration's gain over the defaults."""
    baseline = facts.baseline
    if baseline is None:
        return None
    confidence = facts.space.spec.stop.confidence
    bounds = []
    for config in facts.configs.values():
        if config is baseline:
            continue
        cmp = facts.compare(config, baseline)
        upper = cmp.ci_high if facts.direction == "maximize" else -cmp.ci_low
        bounds.append((upper, config.trials[0] if config.trials else None))
    if not bounds:
        return CouldHaveMissed(None, None, 0, confidence)
    upper, trial = max(bounds, key=lambda b: b[0])
    return CouldHaveMissed(upper, trial, len(bounds), confidence)
