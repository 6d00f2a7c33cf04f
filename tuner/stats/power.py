"""The smallest gain a study can confirm: the minimum detectable effect of its own test.

``detectable_gain`` asks ``compare`` itself, rather than a textbook formula, at what gain
a candidate launched ``candidate_launches`` times would be called significantly faster
than a baseline launched ``baseline_launches`` times, each launch running ``rounds``
rounds at the study's measured noise (between-launch variance with its degrees of
freedom, pooled within-launch variance). The answer is found by bisection on the gain,
so it carries every detail of the test (shared dof, the floored between part, the delta
method) and moves with it. At power 50% (the default, the plain reading of "the smallest
gain it can confirm") it is that threshold: a real gain of exactly this size is called
significant half the time; at a higher power the threshold plus the matching t quantile
of the difference's standard error. docs/statistics.md ("The cost plan") has the reading.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from tuner.stats.compare import Direction, compare
from tuner.stats.estimates import (
    DEFAULT_PRIOR_REL_SD,
    ConfigEstimate,
    LaunchEstimate,
    NoiseEstimate,
    config_estimate,
)
from tuner.stats.student_t import t_critical, t_quantile

_MAX_GAIN = 10.0
"""Bisection bracket: a 1000% gain; beyond it the test is called hopeless (math.inf)."""


@dataclass(frozen=True)
class DetectableGain:
    """The smallest true gain confirmed with probability ``power``, and how it was found.

    ``gain`` is relative (0.02 is 2%); ``threshold`` the observed gain at which the
    comparison turns significant; ``sd`` the relative standard error of the difference
    there and ``dof`` its degrees of freedom. math.inf when no gain would do (the noise
    is unknown).
    """

    gain: float
    threshold: float
    sd: float
    dof: float
    power: float
    confidence: float
    candidate_launches: int
    baseline_launches: int
    rounds: int


def typical_launches(mean: float, rounds: int, k: int) -> list[LaunchEstimate]:
    """``k`` launches of ``rounds`` rounds each at the pooled within-launch noise.

    Their own standard error is left out (``se=None``): the estimate then uses the pooled
    figure and its dof, what a launch whose rounds scatter as usual contributes.
    """
    return [LaunchEstimate(mean=mean, se=None, n=rounds) for _ in range(k)]


def _estimates(
    noise: NoiseEstimate, gain: float, rounds: int, k_candidate: int, k_baseline: int, sign: float
) -> tuple[ConfigEstimate, ConfigEstimate]:
    candidate = config_estimate(typical_launches(1.0 + sign * gain, rounds, k_candidate), noise)
    baseline = config_estimate(typical_launches(1.0, rounds, k_baseline), noise)
    return candidate, baseline


def detectable_gain(
    noise: NoiseEstimate,
    *,
    rounds: int,
    candidate_launches: int,
    baseline_launches: int,
    confidence: float,
    power: float = 0.5,
    direction: Direction = "maximize",
) -> DetectableGain:
    """The minimum detectable effect of ``compare`` at these launch counts (see the module)."""
    if rounds < 1 or candidate_launches < 1 or baseline_launches < 1:
        raise ValueError("rounds and launch counts must be at least 1")
    if not 0 < power < 1:
        raise ValueError(f"power must be within (0, 1), not {power}")
    sign = 1.0 if direction == "maximize" else -1.0
    hi = _MAX_GAIN if direction == "maximize" else 0.999

    def significant(gain: float) -> bool:
        a, b = _estimates(noise, gain, rounds, candidate_launches, baseline_launches, sign)
        return compare(a, b, direction=direction, min_gain=0.0, confidence=confidence).significant

    blank = DetectableGain(
        math.inf, math.inf, math.inf, 0.0, power, confidence, candidate_launches,
        baseline_launches, rounds,
    )  # fmt: skip
    if not significant(hi):
        return blank
    lo = 0.0
    for _ in range(60):  # 2**-60 of the bracket: far below any figure we print
        mid = (lo + hi) / 2
        if significant(mid):
            hi = mid
        else:
            lo = mid
    a, b = _estimates(noise, hi, rounds, candidate_launches, baseline_launches, sign)
    at = compare(a, b, direction=direction, min_gain=0.0, confidence=confidence)
    sd = at.noise_rel / t_critical(confidence, at.dof) if at.noise_rel > 0 else 0.0
    gain = hi + t_quantile(power, at.dof) * sd if power != 0.5 else hi
    return dataclasses.replace(blank, gain=gain, threshold=hi, sd=sd, dof=at.dof)


def final_detectable_gain(
    noise: NoiseEstimate,
    *,
    launches: int,
    rounds: int,
    confidence: float,
    power: float = 0.5,
    direction: Direction = "maximize",
    extra_dof: float | None = None,
) -> DetectableGain:
    """The detectable gain of a final comparison (tuner/stats/final.py) of ``launches``
    fresh launches a side, at the wider of the two noises it uses: the shrunk one and the
    measured one alone (no prior), each with the dof its own launches will add
    (``extra_dof``, default ``2 x launches``)."""
    extra = 2 * launches if extra_dof is None else extra_dof
    options = [dataclasses.replace(noise, dof=noise.dof + extra)]
    if noise.observed_var is not None:
        options.append(
            dataclasses.replace(
                noise, var=noise.observed_var, dof=noise.observed_dof + extra, prior_dof=0
            )
        )
    found = [
        detectable_gain(
            n,
            rounds=rounds,
            candidate_launches=launches,
            baseline_launches=launches,
            confidence=confidence,
            power=power,
            direction=direction,
        )
        for n in options
    ]
    return max(found, key=lambda d: d.gain)


def with_rounds(noise: NoiseEstimate, factor: float) -> NoiseEstimate:
    """The same noise as if every launch ran ``factor`` times the rounds.

    One round scatters as before; what round-to-round noise explains of the spread of
    launch means shrinks by the factor (the rest of that spread is between-launch noise,
    which more rounds do not touch).
    """
    return dataclasses.replace(noise, explained_var=noise.explained_var / factor)


def with_requests(noise: NoiseEstimate, factor: float) -> NoiseEstimate:
    """The same noise as if every round ran ``factor`` times the requests.

    Assumes a round's scatter comes from the requests it samples: one round's variance
    drops by the factor, and so does the prior on restart noise where it came from
    that scatter (it is at least one round's sd, see between_launch_variance); the
    measured between-launch part stays.
    """
    if noise.within_var is None:
        return noise
    within = noise.within_var / factor
    prior_var = noise.prior_rel_sd**2
    if prior_var > DEFAULT_PRIOR_REL_SD**2:  # the prior came from one round's scatter
        prior_var = max(DEFAULT_PRIOR_REL_SD**2, within)
    # The prior's share of the shrunk estimate moves with it; the data's share stays.
    weight = noise.prior_dof + noise.observed_dof
    shift = noise.prior_dof * (noise.prior_rel_sd**2 - prior_var) / weight if weight else 0.0
    var = max(0.0, noise.var - shift)
    return dataclasses.replace(
        noise,
        var=var,
        within_var=within,
        explained_var=noise.explained_var / factor,
        prior_rel_sd=math.sqrt(prior_var),
    )
