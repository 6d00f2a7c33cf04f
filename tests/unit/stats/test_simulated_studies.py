"""Whole studies, simulated: the sweep's screening, confirmation and plateau rules, reduced
to their statistics, keep the defaults when nothing matters and find a real gain.

The plateau rule here is a counter of the simulation's own; the sweep's is
SweepController._plateau in tuner/study, tested in tests/unit/test_sweep_decisions.py.
"""

from __future__ import annotations

import random

from tests.unit.stats.helpers import CONF, MIN_GAIN, recommend_vs_base, simulate_launch
from tuner.stats.compare import is_significant_gain
from tuner.stats.estimates import (
    ConfigEstimate,
    LaunchEstimate,
    between_launch_variance,
    config_estimate,
)
from tuner.stats.recommend import Candidate, Recommendation


def _study(
    seed: int,
    gain: float,
    budget: int,
    between: float,
    within: float,
    found_at: int,
    screen: float = 0.8,
) -> tuple[Recommendation, int]:
    """The sweep as the issue describes it, reduced to its statistics: the baseline twice,
    then one launch per trial; a trial that appears to beat the incumbent (a looser
    interval, at `screen` confidence) is launched again and becomes the incumbent only if
    all its launches beat it at the study's confidence; stop after 6 trials without a
    gain. Only the configuration tried at `found_at` is better."""
    rng = random.Random(seed)
    launches: dict[str, list[LaunchEstimate]] = {}
    changed = {"base": 0}

    def launch(key: str) -> None:
        mean = 80.0 * (1 + gain) if key == "x" else 80.0
        launches.setdefault(key, []).append(simulate_launch(rng, mean, between, within))

    def est(key: str) -> ConfigEstimate:
        return config_estimate(launches[key], between_launch_variance(launches.values()))

    launch("base")
    launch("base")
    incumbent, used = "base", 2
    since_gain = 0  # search trials since the incumbent last changed
    confirmed: set[str] = set()
    trial = 0
    while used < budget and since_gain < 6:
        trial += 1
        key = "x" if trial == found_at else f"c{trial}"
        changed[key] = 3 if key == "x" else rng.randint(1, 4)
        launch(key)
        used += 1
        gained = False
        if used < budget and is_significant_gain(
            est(key), est(incumbent), direction="maximize", min_gain=MIN_GAIN, confidence=screen
        ):
            launch(key)
            used += 1
            if is_significant_gain(
                est(key), est(incumbent), direction="maximize", min_gain=MIN_GAIN, confidence=CONF
            ):
                incumbent, gained = key, True
                confirmed.add(key)
        since_gain = 0 if gained else since_gain + 1
    noise = between_launch_variance(launches.values())
    cands = [
        Candidate(k, config_estimate(v, noise), changed[k], k in confirmed)
        for k, v in launches.items()
    ]
    return recommend_vs_base(cands), used


def test_studies_where_nothing_matters_keep_the_defaults_and_stop_early() -> None:
    kept = early = 0
    n = 100
    for seed in range(n):
        rec, used = _study(seed, 0.0, 20, 0.01, 0.01, found_at=0)
        kept += rec.recommended == "base"
        early += used < 20
    assert kept / n >= 0.95
    assert early / n >= 0.9


def test_studies_with_an_eight_percent_combination_recommend_it() -> None:
    hit = 0
    n = 100
    for seed in range(n):
        rec, _ = _study(1000 + seed, 0.08, 30, 0.01, 0.01, found_at=1 + seed % 6)
        hit += rec.recommended == "x"
    assert hit / n >= 0.9
