"""The final comparison: a study's answer rests on fresh launches, not on the search's.

The search compares many configurations with the same baseline launches and keeps the
one that looked best; testing that one on the launches that made it look best is the
winner's curse, and a 95% test repeated over ten configurations is not a 95% test. So
the search only *selects*. Once it is done, the selected configuration (the candidate)
and the defaults are launched again, ``k`` times each, interleaved (C B B C ...: a drift
that is linear in time falls on both alike), and the answer is the test of those fresh
launches alone:

- the candidate's gain over the defaults, on the final launches only, with a two-sided
  interval at the level of the look it is judged at (tuner/stats/looks.py: each look of
  the comparison's plan has its share of ``1 - confidence``, the shares of every look the
  rule could ever take summing to at most 1), over ``m``, the final comparisons the study
  made (almost always 1). Whatever the earlier looks showed, the chance that any look
  passes a gain below the bar is at most the sum of their shares;
- the noise used is the wider of two: the between-launch noise *measured* over every
  repeated configuration of the study (no prior, its own degrees of freedom) and the
  same shrunk towards the prior (``between_launch_variance``'s default): never smaller
  than what the launches show, and never the prior's optimism alone;
- three outcomes: **passed** when the interval's lower end clears the minimum gain (and
  the drift, see below): at the configured confidence it beats the defaults by at least
  that much; **refuted** when its upper end is at or below the bar (the mirror image:
  at the same confidence the gain is below what is worth deploying); else **open**: more
  launches would settle it (the answer says how many);
- the drift: the final baseline launches against the study's first ones. When they moved
  significantly and by more than the minimum gain, gains below that move cannot be told
  from it; the bar is raised to it and the sentence says so.

Why this holds with few launches: the final launches are drawn after the candidate was
fixed, so their errors are independent of the selection; under the usual normal model
the launch means are independent of the residuals the noise is measured from (sample
means and variances of normal data are independent), so the t interval keeps its level
whatever the search did. docs/statistics.md ("The final comparison") says it in full.
Pure: estimates in, a verdict out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.stats.compare import Comparison, Direction, compare
from tuner.stats.estimates import (
    LaunchEstimate,
    NoiseEstimate,
    between_launch_variance,
    config_estimate,
)
from tuner.stats.looks import LookPlan


@dataclass(frozen=True)
class FinalNoise:
    """The two noise estimates a final comparison takes the wider of."""

    measured: NoiseEstimate | None
    """The launches' own between-launch noise, no prior (None without repeats)."""
    shrunk: NoiseEstimate
    """The same shrunk towards the prior."""

    @property
    def rel_sd(self) -> float:
        """The larger of the two sds (the noise a sentence quotes)."""
        measured = self.measured.rel_sd if self.measured is not None else math.inf
        return max(measured, self.shrunk.rel_sd)


def final_noise(groups: Sequence[Sequence[LaunchEstimate]]) -> FinalNoise:
    """Both noise estimates over every configuration's launches (a group per configuration)."""
    shrunk = between_launch_variance(groups)
    assert shrunk is not None  # the prior's weight is never 0 here
    measured = between_launch_variance(groups, prior_dof=0)
    return FinalNoise(measured=measured, shrunk=shrunk)


@dataclass(frozen=True)
class FinalComparison:
    """The verdict of one final comparison (see the module)."""

    candidate: str
    """The key of the configuration compared with the defaults."""
    gain: Comparison
    """Candidate against the final baseline launches, at the adjusted confidence."""
    drift: Comparison | None
    """The final baseline launches against the study's first ones (None: none to compare)."""
    bar: float
    """What the lower end must clear: the minimum gain, or the drift when it is larger."""
    comparisons: int
    """Final comparisons in the study (Bonferroni's m)."""
    plan: LookPlan
    """The looks this comparison may take (their sizes and levels)."""
    look: int
    """The look it was judged at (1-based): its launches a side against the plan's sizes."""
    candidate_launches: int
    baseline_launches: int

    @property
    def lower(self) -> float:
        """The lower end of the gain's interval (signed: positive is better)."""
        return self.gain.gain - self.gain.noise_rel

    @property
    def upper(self) -> float:
        return self.gain.gain + self.gain.noise_rel

    @property
    def passed(self) -> bool:
        return self.lower > self.bar

    @property
    def refuted(self) -> bool:
        """No gain worth deploying: the interval's upper end is at or below the bar, the
        mirror of ``passed`` at the same level (see the module)."""
        return not self.passed and self.upper <= self.bar

    @property
    def straddles(self) -> bool:
        """Neither passed nor refuted: open (more launches may decide)."""
        return not self.passed and not self.refuted

    @property
    def drift_significant(self) -> bool:
        return self.drift is not None and self.drift.significant

    @property
    def undecidable_below(self) -> float | None:
        """The drift's size when it exceeds the minimum gain: gains below it cannot be told."""
        if self.drift is None or not self.drift.significant:
            return None
        size = abs(self.drift.rel_diff)
        return size if size > self.gain.min_gain else None


def adjusted_confidence(
    confidence: float, comparisons: int, plan: LookPlan | None = None, look: int = 1
) -> float:
    """The level of look ``look`` of ``plan`` (a single look at ``confidence`` without a
    plan), Bonferroni over ``comparisons`` final comparisons."""
    if plan is None:
        return 1.0 - (1.0 - confidence) / max(1, comparisons)
    return plan.level(confidence, look, comparisons)


def final_comparison(
    candidate: str,
    candidate_launches: Sequence[LaunchEstimate],
    baseline_launches: Sequence[LaunchEstimate],
    opening_launches: Sequence[LaunchEstimate],
    noise: FinalNoise,
    *,
    direction: Direction,
    min_gain: float,
    confidence: float,
    comparisons: int = 1,
    plan: LookPlan | None = None,
) -> FinalComparison:
    """The candidate's final launches against the defaults' (see the module).

    ``opening_launches`` are the study's first baseline launches (the drift's reference).
    ``plan``: the looks the comparison may take (default: one look of the launches it has).
    """
    if not candidate_launches or not baseline_launches:
        raise ValueError("a final comparison needs a launch of the candidate and of the defaults")
    launches = max(len(candidate_launches), len(baseline_launches))
    if plan is None:
        plan = LookPlan(first=launches, sized=launches, single=True)
    look = plan.look_of(launches)
    level = adjusted_confidence(confidence, comparisons, plan, look)
    gain = _wider(candidate_launches, baseline_launches, noise, direction, min_gain, level)
    drift = (
        _wider(baseline_launches, opening_launches, noise, "maximize", min_gain, confidence)
        if opening_launches
        else None
    )
    bar = min_gain
    if drift is not None and drift.significant:
        bar = max(bar, abs(drift.rel_diff))
    return FinalComparison(
        candidate=candidate,
        gain=gain,
        drift=drift,
        bar=bar,
        comparisons=max(1, comparisons),
        plan=plan,
        look=look,
        candidate_launches=len(candidate_launches),
        baseline_launches=len(baseline_launches),
    )


def _wider(
    a: Sequence[LaunchEstimate],
    b: Sequence[LaunchEstimate],
    noise: FinalNoise,
    direction: Direction,
    min_gain: float,
    confidence: float,
) -> Comparison:
    """a against b under each noise estimate; the comparison with the wider interval."""
    found = []
    for estimate in (noise.measured, noise.shrunk):
        if estimate is None:
            # No repeated launches: the between-launch noise is unknown, the interval infinite.
            ea, eb = config_estimate(a, None), config_estimate(b, None)
        else:
            ea, eb = config_estimate(a, estimate), config_estimate(b, estimate)
        found.append(compare(ea, eb, direction=direction, min_gain=min_gain, confidence=confidence))
    return max(found, key=lambda c: c.noise_rel)
