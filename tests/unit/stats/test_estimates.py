"""tuner.stats.estimates on synthetic launches with known between- and within-launch noise."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tests.unit.stats.helpers import CONF, gain_of, simulate_launch
from tuner.stats.estimates import (
    LaunchEstimate,
    NoiseEstimate,
    between_launch_variance,
    config_estimate,
    launch_estimate,
    mean_se,
)


def test_mean_se() -> None:
    mean, se = mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert se == pytest.approx(statistics.stdev([1, 2, 3, 4]) / 2)
    assert mean_se([5.0]) == (5.0, None)


def test_launch_estimate_single_round_has_no_se() -> None:
    one = launch_estimate([80.0])
    assert (one.mean, one.se, one.n) == (80.0, None, 1)
    three = launch_estimate([80.0, 82.0, 84.0])
    assert three.se == pytest.approx(2 / math.sqrt(3))
    assert three.rel_se == pytest.approx(2 / math.sqrt(3) / 82)
    with pytest.raises(ValueError):
        launch_estimate([80.0, math.nan])


# ------------------------------------------------------------ between-launch noise


def test_noise_is_the_prior_until_something_is_launched_twice() -> None:
    singles = [[launch_estimate([100.0, 101.0, 99.0])], [launch_estimate([50.0])]]
    noise = between_launch_variance(singles, prior_rel_sd=0.01, prior_dof=2)
    assert noise is not None
    assert (noise.n_configs, noise.n_launches, noise.dof) == (0, 0, 2)
    assert noise.observed_var is None
    assert noise.rel_sd == pytest.approx(0.01)  # rounds scatter 1%: the floor does not bite
    assert "assumed" in noise.describe()
    assert between_launch_variance(singles, prior_dof=0) is None
    assert between_launch_variance([], prior_dof=0) is None


def test_prior_is_at_least_the_round_to_round_noise() -> None:
    # Rounds scatter 5%: a restart is assumed to move the mean at least as much.
    noisy = [[launch_estimate([95.0, 100.0, 105.0])]]
    noise = between_launch_variance(noisy, prior_rel_sd=0.01)
    assert noise is not None
    assert noise.rel_sd == pytest.approx(0.05)
    quiet = between_launch_variance(noisy, prior_rel_sd=0.01, prior_from_within=False)
    assert quiet is not None and quiet.rel_sd == pytest.approx(0.01)


def test_two_launches_only_shrink_towards_the_prior_by_hand() -> None:
    # Baseline launched twice: 100 and 104, each a perfectly steady launch (se 0).
    pair = [LaunchEstimate(100.0, 0.0, 3), LaunchEstimate(104.0, 0.0, 3)]
    observed = statistics.variance([100 / 102, 104 / 102])  # one dof
    noise = between_launch_variance([pair], prior_rel_sd=0.01, prior_dof=2)
    assert noise is not None
    assert noise.observed_var == pytest.approx(observed)
    assert noise.observed_dof == 1
    assert noise.dof == 3
    assert noise.var == pytest.approx((2 * 0.01**2 + observed) / 3)
    assert (noise.n_configs, noise.n_launches) == (1, 2)
    # Without a prior, one dof: honest and very wide (t = 12.7).
    raw = between_launch_variance([pair], prior_dof=0)
    assert raw is not None and raw.dof == 1 and raw.var == pytest.approx(observed)
    est = config_estimate([LaunchEstimate(100.0, 0.0, 3)], raw)
    assert est.interval(CONF)[1] - 100 == pytest.approx(
        12.706 * math.sqrt(observed) * 100, rel=1e-3
    )


def test_between_launch_variance_recovers_known_values_across_speeds() -> None:
    # 300 configurations of very different speed, 3 launches of 5 rounds each:
    # between 3% and within 2% relative sd. Relative pooling must see through the speeds.
    rng = random.Random(7)
    groups = []
    for _ in range(300):
        mean = rng.choice([10.0, 81.4, 2276.0])
        groups.append([simulate_launch(rng, mean, 0.03, 0.02, rounds=5) for _ in range(3)])
    noise = between_launch_variance(groups, prior_dof=0)
    assert noise is not None
    assert noise.rel_sd == pytest.approx(0.03, rel=0.08)
    assert noise.within_rel_sd == pytest.approx(0.02, rel=0.05)
    assert noise.dof == 600 and noise.n_configs == 300 and noise.n_launches == 900


def test_between_launch_variance_is_scale_free() -> None:
    rng = random.Random(3)
    groups = [[simulate_launch(rng, 100.0, 0.02, 0.01) for _ in range(2)] for _ in range(5)]
    scaled = [
        [LaunchEstimate(x.mean * 37, None if x.se is None else x.se * 37, x.n) for x in g]
        for g in groups
    ]
    a = between_launch_variance(groups)
    b = between_launch_variance(scaled)
    assert a is not None and b is not None
    assert a.var == pytest.approx(b.var, rel=1e-12)


def test_method_of_moments_removes_within_launch_noise() -> None:
    # No between-launch noise at all: launch means differ only by round-to-round noise,
    # which the within-launch errors explain. The average raw estimate is about 0.
    rng = random.Random(11)
    raw = []
    for _ in range(400):
        pair = [simulate_launch(rng, 100.0, 0.0, 0.03, rounds=4) for _ in range(2)]
        center = (pair[0].mean + pair[1].mean) / 2
        spread = statistics.variance([x.mean / center for x in pair])
        raw.append(spread - statistics.fmean((x.se or 0.0) ** 2 for x in pair) / center**2)
    assert abs(statistics.fmean(raw)) < 0.03**2 / 4 * 0.15
    groups = [
        [simulate_launch(rng, 100.0, 0.0, 0.03, rounds=4) for _ in range(2)] for _ in range(400)
    ]
    noise = between_launch_variance(groups, prior_dof=0)
    assert noise is not None
    assert noise.rel_sd < 0.006  # floored at 0 per pool, not per configuration


def test_single_round_launches_pool_their_total_noise() -> None:
    # One round per launch: no within-launch figure, so the between-launch estimate is
    # the whole variance of a launch (between 2% and within 2%: 2.83%).
    rng = random.Random(5)
    groups = [
        [simulate_launch(rng, 50.0, 0.02, 0.02, rounds=1) for _ in range(3)] for _ in range(300)
    ]
    noise = between_launch_variance(groups, prior_dof=0)
    assert noise is not None and noise.within_var is None
    assert noise.rel_sd == pytest.approx(math.hypot(0.02, 0.02), rel=0.08)


# ------------------------------------------------------------- configuration estimate


def test_a_single_lucky_launch_does_not_look_precise() -> None:
    # Three rounds that agree to 0.1%, but restarts are known to move the mean 2%.
    steady = launch_estimate([108.0, 108.1, 107.9])
    noise = NoiseEstimate.prior(rel_sd=0.02, dof=4)
    est = config_estimate([steady], noise)
    assert steady.se is not None
    assert est.se == pytest.approx(math.sqrt((0.02 * 108) ** 2 + steady.se**2))
    assert est.rel_se > 0.02
    # Launched twice, the between part halves.
    twice = config_estimate([steady, steady], noise)
    assert twice.var_between == pytest.approx(est.var_between / 2)


def test_pooled_within_noise_is_used_when_larger_than_a_launch_own() -> None:
    steady = launch_estimate([100.0, 100.0, 100.0])  # se 0: three identical rounds
    noise = NoiseEstimate(
        var=0.0001, dof=5, n_configs=1, n_launches=2, within_var=0.02**2, within_dof=40
    )
    est = config_estimate([steady], noise)
    assert est.var_within == pytest.approx(0.02**2 * 100**2 / 3)
    assert est.dof_within == 40
    one_round = config_estimate([launch_estimate([100.0])], noise)
    assert one_round.var_within == pytest.approx(0.02**2 * 100**2)


def test_without_noise_information() -> None:
    single = config_estimate([launch_estimate([100.0, 101.0, 99.0])], None)
    assert math.isinf(single.se) and single.interval(CONF) == (-math.inf, math.inf)
    pair = [LaunchEstimate(100.0, 0.5, 3), LaunchEstimate(104.0, 0.5, 3)]
    own = config_estimate(pair, None)
    assert math.isfinite(own.se) and own.dof_between == 1
    # An infinitely uncertain configuration is never better nor worse.
    assert gain_of(single, own) == "within noise"


def _coverage(between: float, within: float, rounds: int, launches: int, prior_dof: float) -> float:
    """Share of intervals that hold the true mean, noise pooled from 8 repeated configs."""
    rng = random.Random(2024 + rounds + launches)
    hits, n = 0, 1500
    for _ in range(n):
        history = [
            [simulate_launch(rng, 60.0, between, within, rounds) for _ in range(2)]
            for _ in range(8)
        ]
        noise = between_launch_variance(history, prior_rel_sd=between, prior_dof=prior_dof)
        target = [simulate_launch(rng, 100.0, between, within, rounds) for _ in range(launches)]
        low, high = config_estimate(target, noise).interval(CONF)
        hits += low <= 100.0 <= high
    return hits / n


@pytest.mark.parametrize(
    ("rounds", "launches", "lowest"),
    [
        (3, 1, 0.94),
        (3, 2, 0.94),
        (5, 1, 0.94),
        # One round: nothing measures round-to-round noise, so the spread of launch
        # means carries it, and the 2% prior (the between part only) is a bit short.
        (1, 1, 0.92),
        (1, 2, 0.92),
    ],
)
def test_interval_coverage_is_the_confidence(rounds: int, launches: int, lowest: float) -> None:
    # Between 2%, within 2%, the prior right; 8 configurations launched twice (8 dof).
    cover = _coverage(0.02, 0.02, rounds, launches, prior_dof=2)
    assert lowest <= cover <= 0.985, cover


def test_coverage_with_two_launches_and_no_prior_is_conservative() -> None:
    # Only the baseline pair informs the noise (1 dof) and no prior: wide but honest.
    rng = random.Random(99)
    hits = widths = 0.0
    n = 1500
    for _ in range(n):
        base = [simulate_launch(rng, 100.0, 0.02, 0.01) for _ in range(2)]
        noise = between_launch_variance([base], prior_dof=0)
        trial = simulate_launch(rng, 100.0, 0.02, 0.01)
        low, high = config_estimate([trial], noise).interval(CONF)
        hits += low <= 100.0 <= high
        widths += (high - low) / 2 / n
    assert hits / n >= 0.94
    assert widths > 5 * 0.02 * 100  # much wider than 2 sd: one dof says little
