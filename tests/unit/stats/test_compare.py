"""tuner.stats.compare: the Welch verdict by hand, its error rates and power, pruning."""

from __future__ import annotations

import math
import random

import pytest

from tests.unit.stats.helpers import CONF, MIN_GAIN, estimate, gain_of, simulate_launch
from tuner.stats.compare import compare, is_significant_gain, should_prune
from tuner.stats.estimates import (
    ConfigEstimate,
    NoiseEstimate,
    between_launch_variance,
    config_estimate,
)
from tuner.stats.student_t import t_quantile

# ---------------------------------------------------------------------- comparison


def test_compare_by_hand() -> None:
    a = ConfigEstimate(
        mean=108.0,
        se=2.0,
        dof=10,
        n_launches=2,
        n_rounds=6,
        var_between=3.0,
        var_within=1.0,
        dof_between=10,
        dof_within=10,
    )
    b = ConfigEstimate(
        mean=100.0,
        se=2.0,
        dof=10,
        n_launches=2,
        n_rounds=6,
        var_between=3.0,
        var_within=1.0,
        dof_between=10,
        dof_within=10,
    )
    c = compare(a, b, direction="maximize", min_gain=MIN_GAIN, confidence=CONF)
    var = (4.0 + 1.08**2 * 4.0) / 100**2
    dof = var**2 / (((3 + 1.08**2 * 3) / 1e4) ** 2 / 10 + ((1 + 1.08**2) / 1e4) ** 2 / 10)
    half = t_quantile(0.975, dof) * math.sqrt(var)
    assert c.diff == pytest.approx(8.0)
    assert c.rel_diff == pytest.approx(0.08) and c.gain == pytest.approx(0.08)
    assert c.dof == pytest.approx(dof)
    assert c.noise_rel == pytest.approx(half)
    assert (c.ci_low, c.ci_high) == (pytest.approx(0.08 - half), pytest.approx(0.08 + half))
    assert (c.diff_low, c.diff_high) == (
        pytest.approx(8 - 100 * half),
        pytest.approx(8 + 100 * half),
    )
    assert c.verdict == "better" and c.significant
    assert "+8.0% ±" in c.describe() and "better" in c.describe()
    assert (
        compare(b, a, direction="maximize", min_gain=MIN_GAIN, confidence=CONF).verdict == "worse"
    )
    # For a latency the same numbers mean a is slower.
    lat = compare(a, b, direction="minimize", min_gain=MIN_GAIN, confidence=CONF)
    assert lat.verdict == "worse" and lat.gain == pytest.approx(-0.08)
    assert lat.rel_diff == pytest.approx(0.08)


def test_verdict_needs_both_min_gain_and_significance() -> None:
    base = estimate(100.0, 0.001)
    # Significant (±0.3%) but only 0.5%: not worth a change.
    small = compare(
        estimate(100.5, 0.001), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    assert small.significant and small.verdict == "within noise"
    # 5% but noise ±9.8%: could be nothing.
    noisy = compare(
        estimate(105.0, 0.05), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    assert not noisy.significant and noisy.verdict == "within noise"
    # 1.2% ± 0.3%: a gain. The interval need not clear min_gain, only zero.
    clear = compare(
        estimate(101.2, 0.001), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    assert clear.verdict == "better" and 0 < clear.ci_low < MIN_GAIN
    assert is_significant_gain(
        estimate(101.5, 0.001), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    with pytest.raises(ValueError):
        compare(base, estimate(0.0, 0.0), direction="maximize", min_gain=0, confidence=CONF)


def _false_positive_and_power(
    gain: float, between: float, within: float, prior_rel_sd: float, prior_dof: float, seed: int
) -> float:
    """Share of "better" for a config launched twice against a baseline launched twice,
    noise pooled from those two configurations only (2 dof of data)."""
    rng = random.Random(seed)
    n, better = 2000, 0
    for _ in range(n):
        base = [simulate_launch(rng, 80.0, between, within) for _ in range(2)]
        cand = [simulate_launch(rng, 80.0 * (1 + gain), between, within) for _ in range(2)]
        noise = between_launch_variance(
            [base, cand], prior_rel_sd=prior_rel_sd, prior_dof=prior_dof
        )
        better += gain_of(config_estimate(cand, noise), config_estimate(base, noise)) == "better"
    return better / n


def test_false_positive_rate_under_the_null() -> None:
    # Nominal one-sided rate is 2.5%; min_gain only lowers it.
    assert _false_positive_and_power(0.0, 0.02, 0.02, 0.02, 2, seed=1) <= 0.035
    # Two launches each, no prior at all (2 dof): still honest.
    assert _false_positive_and_power(0.0, 0.02, 0.02, 0.02, 0, seed=2) <= 0.035
    # A prior that is too optimistic (1% on a 2% machine) costs some, not all, control.
    assert _false_positive_and_power(0.0, 0.02, 0.01, 0.01, 2, seed=3) <= 0.08


def test_power_for_a_real_eight_percent_gain() -> None:
    assert _false_positive_and_power(0.08, 0.01, 0.01, 0.01, 2, seed=4) >= 0.95
    assert _false_positive_and_power(0.08, 0.02, 0.02, 0.02, 2, seed=5) >= 0.6


def test_false_positive_rate_single_launch_against_the_baseline_pair() -> None:
    # The sweep's first look at a trial: one launch against the two baseline launches,
    # noise from the baseline pair (1 dof) and the prior; one round only, too.
    for rounds, seed in ((3, 6), (1, 7)):
        rng = random.Random(seed)
        n, better = 2000, 0
        for _ in range(n):
            base = [simulate_launch(rng, 80.0, 0.01, 0.01, rounds) for _ in range(2)]
            trial = [simulate_launch(rng, 80.0, 0.01, 0.01, rounds)]
            noise = between_launch_variance([base, trial])
            better += (
                gain_of(config_estimate(trial, noise), config_estimate(base, noise)) == "better"
            )
        assert better / n <= 0.03, (rounds, better / n)


# ------------------------------------------------------------------------- pruning


def test_should_prune() -> None:
    best = estimate(100.0, 0.01, dof=20)
    noise = NoiseEstimate(
        var=0.01**2, dof=10, n_configs=2, n_launches=4, within_var=0.01**2, within_dof=20
    )
    assert should_prune([50.0, 51.0], best, noise=noise, direction="maximize", confidence=CONF)
    assert not should_prune([97.0, 98.0], best, noise=noise, direction="maximize", confidence=CONF)
    # One round: allowed only because the pooled within-launch noise is known.
    assert should_prune([50.0], best, noise=noise, direction="maximize", confidence=CONF)
    blind = NoiseEstimate.prior()
    assert not should_prune([50.0], best, noise=blind, direction="maximize", confidence=CONF)
    assert should_prune([50.0, 50.5], best, noise=blind, direction="maximize", confidence=CONF)
    # Nothing known about launch-to-launch noise: never.
    assert not should_prune([50.0, 51.0], best, noise=None, direction="maximize", confidence=CONF)
    assert not should_prune([], best, noise=noise, direction="maximize", confidence=CONF)
    # Latency: lower is better.
    assert should_prune([200.0, 201.0], best, direction="minimize", confidence=CONF, noise=noise)
    assert not should_prune([50.0, 51.0], best, direction="minimize", confidence=CONF, noise=noise)


def _prune_rate(worse: float, between: float, within: float, seed: int) -> float:
    """Share of launches pruned within 3 rounds, best = the baseline launched twice."""
    rng = random.Random(seed)
    pruned, n = 0, 1000
    for _ in range(n):
        base = [simulate_launch(rng, 80.0, between, within) for _ in range(2)]
        noise = between_launch_variance([base])
        best = config_estimate(base, noise)
        rounds: list[float] = []
        launch_mean = 80.0 * (1 - worse) * (1 + rng.gauss(0, between))
        for _ in range(3):
            rounds.append(launch_mean * (1 + rng.gauss(0, within)))
            if should_prune(rounds, best, direction="maximize", confidence=CONF, noise=noise):
                pruned += 1
                break
    return pruned / n


def test_pruning_rarely_stops_a_trial_as_good_as_the_best() -> None:
    assert _prune_rate(0.0, 0.02, 0.03, seed=8) <= 0.01
    assert _prune_rate(0.0, 0.01, 0.01, seed=9) <= 0.01


def test_pruning_stops_a_clearly_worse_trial() -> None:
    assert _prune_rate(0.3, 0.02, 0.03, seed=10) >= 0.95
    assert _prune_rate(0.1, 0.01, 0.01, seed=11) >= 0.9
