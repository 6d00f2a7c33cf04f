"""The final comparison in the answer: what the fresh launches showed, and the drift.

`tuner best`, its JSON (``final``) and `tuner report` show the comparison the answer
rests on (tuner/stats/final.py): the candidate's gain over the defaults on the final
launches alone, with the interval the study-wide guarantee implies, and how far the
defaults moved between the study's first launches and its last.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from tuner import stats
from tuner.stats.wording import percent
from tuner.study.facts.analysis import StudyAnalysis
from tuner.study.facts.final_words import drift_sentence, interval, launches_phrase


@dataclass(frozen=True)
class DriftAnswer:
    """The final baseline launches against the study's first ones (relative to the first)."""

    rel_diff: float
    ci_low: float
    ci_high: float
    significant: bool
    undecidable_below: float | None
    """When the drift is significant and larger than min_gain: gains below it cannot be told."""
    text: str | None


@dataclass(frozen=True)
class FinalAnswer:
    """The final comparison that decided the answer (see the module)."""

    trial: int | None
    """The candidate's first trial."""
    passed: bool
    gain: float
    ci_low: float
    ci_high: float
    """The gain's interval (signed: positive is better) at ``confidence``."""
    confidence: float
    """The level of that interval: the study's, Bonferroni-adjusted over ``comparisons``
    and the ``looks`` each may take."""
    comparisons: int
    looks: int
    bar: float
    """What the lower end had to clear: min_gain, or the drift when larger."""
    candidate_launches: int
    baseline_launches: int
    noise_rel_sd: float
    """The between-launch noise it used: the wider of measured and shrunk."""
    drift: DriftAnswer | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def lines(self) -> list[str]:
        """What `tuner best` prints under the recommendation (whose sentence already says
        the final comparison): the drift, significant or not."""
        out = []
        if self.drift is not None:
            moved = (
                self.drift.text
                or f"the defaults moved {self.drift.rel_diff * 100:+.1f}% "
                "between the study's first launches and its last, within the noise"
            )
            out.append(f"Drift: {moved}.")
        return out


def final_answer(facts: StudyAnalysis, rec: stats.Recommendation | None) -> FinalAnswer | None:
    """The final comparison the answer ``rec`` (``facts.recommendation()``) rests on: the
    passed one it recommends, else the last."""
    finals = facts.final_comparisons()
    if not finals:
        return None
    chosen = next(
        (f for f in finals if rec is not None and f.passed and f.candidate == rec.recommended),
        finals[-1],
    )
    config = facts.configs.get(chosen.candidate)
    trial = config.trials[0] if config is not None and config.trials else None
    noise = facts.final_noise
    assert noise is not None  # a final comparison has launches, and so a noise estimate
    verdict = "clears" if chosen.passed else "does not clear"
    what = "drift" if chosen.bar > chosen.gain.min_gain else "minimum gain"
    text = (
        f"trial {trial} against the defaults on {launches_phrase(chosen)}: {interval(chosen)}, "
        f"which {verdict} the {percent(chosen.bar)} {what} (noise ±{percent(noise.rel_sd)} "
        "between launches, the larger of measured and prior-shrunk)"
    )
    return FinalAnswer(
        trial=trial,
        passed=chosen.passed,
        gain=chosen.gain.gain,
        ci_low=chosen.lower,
        ci_high=chosen.upper,
        confidence=chosen.gain.confidence,
        comparisons=chosen.comparisons,
        looks=chosen.look,
        bar=chosen.bar,
        candidate_launches=chosen.candidate_launches,
        baseline_launches=chosen.baseline_launches,
        noise_rel_sd=noise.rel_sd,
        drift=_drift(chosen),
        text=text,
    )


def _drift(f: stats.FinalComparison) -> DriftAnswer | None:
    if f.drift is None:
        return None
    return DriftAnswer(
        rel_diff=f.drift.rel_diff,
        ci_low=f.drift.ci_low,
        ci_high=f.drift.ci_high,
        significant=f.drift.significant,
        undecidable_below=f.undecidable_below,
        text=drift_sentence(f),
    )
