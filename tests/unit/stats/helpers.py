"""Shared by the stats tests: simulated launches and the study's usual settings.

Simulations use random.Random(seed), so every rate asserted with them is a fixed number;
the bounds leave room for the sampling error of the number of repetitions.
"""

from __future__ import annotations

import math
import random

from tuner.stats.compare import Direction, compare
from tuner.stats.estimates import ConfigEstimate, LaunchEstimate, launch_estimate
from tuner.stats.recommend import Candidate, Recommendation, recommend

CONF = 0.95
MIN_GAIN = 0.01


def simulate_launch(
    rng: random.Random, mean: float, between: float, within: float, rounds: int = 3
) -> LaunchEstimate:
    """One launch: its mean moves by `between` (relative sd), each round by `within`."""
    launch_mean = mean * (1 + rng.gauss(0, between))
    return launch_estimate([launch_mean * (1 + rng.gauss(0, within)) for _ in range(rounds)])


def gain_of(a: ConfigEstimate, b: ConfigEstimate, direction: Direction = "maximize") -> str:
    """The verdict of a against b at the study's usual confidence and min_gain."""
    return compare(a, b, direction=direction, min_gain=MIN_GAIN, confidence=CONF).verdict


def estimate(mean: float, rel_se: float, dof: float = math.inf) -> ConfigEstimate:
    """A configuration estimate whose error is all between-launch, ``rel_se`` of the mean."""
    var = (mean * rel_se) ** 2
    return ConfigEstimate(
        mean, math.sqrt(var), dof, 2, 6, var_between=var, var_within=0.0, dof_between=dof
    )


def recommend_vs_base(cands: list[Candidate], direction: Direction = "maximize") -> Recommendation:
    """recommend() with the baseline keyed "base", at the usual confidence and min_gain."""
    return recommend(
        cands, direction=direction, min_gain=MIN_GAIN, confidence=CONF, baseline_key="base"
    )
