"""tuner.stats on synthetic samples with known means and variances.

Simulations use random.Random(seed), so every rate asserted here is a fixed number;
the bounds leave room for the sampling error of the number of repetitions.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from tuner.stats import (
    Candidate,
    ConfigEstimate,
    Direction,
    LaunchEstimate,
    NoiseEstimate,
    Recommendation,
    between_launch_variance,
    compare,
    config_estimate,
    is_significant_gain,
    launch_estimate,
    mean_se,
    recommend,
    satterthwaite,
    should_prune,
    t_cdf,
    t_critical,
    t_quantile,
)

CONF = 0.95
MIN_GAIN = 0.01


def simulate_launch(
    rng: random.Random, mean: float, between: float, within: float, rounds: int = 3
) -> LaunchEstimate:
    """One launch: its mean moves by `between` (relative sd), each round by `within`."""
    launch_mean = mean * (1 + rng.gauss(0, between))
    return launch_estimate([launch_mean * (1 + rng.gauss(0, within)) for _ in range(rounds)])


def gain_of(a: ConfigEstimate, b: ConfigEstimate, direction: Direction = "maximize") -> str:
    return compare(a, b, direction=direction, min_gain=MIN_GAIN, confidence=CONF).verdict


# ---------------------------------------------------------------------- Student t


@pytest.mark.parametrize(
    ("p", "dof", "expected"),
    [
        # Printed t tables (two-sided 90/95/99/99.9%).
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 3, 3.182),
        (0.975, 4, 2.776),
        (0.975, 5, 2.571),
        (0.975, 10, 2.228),
        (0.975, 30, 2.042),
        (0.975, 120, 1.980),
        (0.95, 1, 6.314),
        (0.95, 7, 1.895),
        (0.995, 3, 5.841),
        (0.995, 20, 2.845),
        (0.9995, 1, 636.619),
        (0.9995, 4, 8.610),
        (0.9995, 60, 3.460),
        (0.6, 7, 0.263),
    ],
)
def test_t_quantile_matches_tables(p: float, dof: float, expected: float) -> None:
    assert t_quantile(p, dof) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.999])
def test_t_quantile_closed_forms(p: float) -> None:
    # dof 1 is Cauchy; dof 4 has a closed form too (Hill 1970): checks the numeric path.
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-12)
    alpha = 4 * p * (1 - p)
    q4 = math.sqrt(4 * (math.cos(math.acos(math.sqrt(alpha)) / 3) / math.sqrt(alpha) - 1))
    assert t_quantile(p, 4) == pytest.approx(q4, rel=1e-9)


@pytest.mark.parametrize("dof", [0.7, 1.5, 2.5, 3.3, 7.9, 42.0, 99.0, 100.0, 5000.0])
@pytest.mark.parametrize("p", [0.55, 0.8, 0.975, 0.9995])
def test_t_quantile_inverts_cdf_for_fractional_dof(p: float, dof: float) -> None:
    assert t_cdf(t_quantile(p, dof), dof) == pytest.approx(p, abs=1e-10)
    assert t_quantile(1 - p, dof) == pytest.approx(-t_quantile(p, dof), rel=1e-12)


def test_t_quantile_limits() -> None:
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.5, 3) == 0.0
    # Monotone in dof between integers, joins the series at 100 without a step.
    assert t_quantile(0.975, 2) > t_quantile(0.975, 2.5) > t_quantile(0.975, 3)
    assert t_quantile(0.975, 99.999) == pytest.approx(t_quantile(0.975, 100), abs=1e-6)
    assert t_quantile(0.975, 100) == pytest.approx(1.98397, abs=1e-5)
    assert t_critical(0.95, 10) == pytest.approx(2.228, abs=1e-3)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


def test_satterthwaite() -> None:
    # Two equal variances with 4 dof each pool to 8 dof; a known variance adds none.
    assert satterthwaite([(1.0, 4), (1.0, 4)]) == pytest.approx(8.0)
    assert satterthwaite([(1.0, 4), (0.0, 1)]) == pytest.approx(4.0)
    assert satterthwaite([(1.0, math.inf)]) == math.inf
    assert satterthwaite([]) == math.inf
    assert satterthwaite([(math.inf, 3)]) == 0.0


# ---------------------------------------------------------------------- summaries


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


def _estimate(mean: float, rel_se: float, dof: float = math.inf) -> ConfigEstimate:
    var = (mean * rel_se) ** 2
    return ConfigEstimate(
        mean, math.sqrt(var), dof, 2, 6, var_between=var, var_within=0.0, dof_between=dof
    )


def test_verdict_needs_both_min_gain_and_significance() -> None:
    base = _estimate(100.0, 0.001)
    # Significant (±0.3%) but only 0.5%: not worth a change.
    small = compare(
        _estimate(100.5, 0.001), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    assert small.significant and small.verdict == "within noise"
    # 5% but noise ±9.8%: could be nothing.
    noisy = compare(
        _estimate(105.0, 0.05), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    assert not noisy.significant and noisy.verdict == "within noise"
    # 1.2% ± 0.3%: a gain. The interval need not clear min_gain, only zero.
    clear = compare(
        _estimate(101.2, 0.001), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    assert clear.verdict == "better" and 0 < clear.ci_low < MIN_GAIN
    assert is_significant_gain(
        _estimate(101.5, 0.001), base, direction="maximize", min_gain=MIN_GAIN, confidence=CONF
    )
    with pytest.raises(ValueError):
        compare(base, _estimate(0.0, 0.0), direction="maximize", min_gain=0, confidence=CONF)


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
    best = _estimate(100.0, 0.01, dof=20)
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


# -------------------------------------------------------------------- recommendation


def _candidates(specs: list[tuple[str, float, int, int, bool]], seed: int = 1) -> list[Candidate]:
    """(key, true mean, launches, settings changed, confirmed) -> candidates at 1% noise."""
    rng = random.Random(seed)
    launches = {
        key: [simulate_launch(rng, mu, 0.01, 0.01) for _ in range(k)] for key, mu, k, _, _ in specs
    }
    noise = between_launch_variance(launches.values())
    return [
        Candidate(
            key, config_estimate(launches[key], noise), changed, confirmed, label=f"trial {i}"
        )
        for i, (key, _, _, changed, confirmed) in enumerate(specs)
    ]


def _recommend(cands: list[Candidate], direction: Direction = "maximize") -> Recommendation:
    return recommend(
        cands, direction=direction, min_gain=MIN_GAIN, confidence=CONF, baseline_key="base"
    )


def test_keep_the_defaults_when_nothing_beats_them() -> None:
    cands = _candidates(
        [
            ("base", 80, 2, 0, True),
            ("a", 80, 2, 2, True),
            ("b", 80, 1, 1, False),
            ("c", 80, 1, 3, False),
        ]
    )
    rec = _recommend(cands)
    assert rec.recommended == "base" and rec.keep_defaults
    # "a" has the best trusted mean by luck; single launches do not compete.
    assert rec.best == "a" and set(rec.equivalent) == {"base", "a"}
    assert rec.reason.startswith("keep the defaults: the best configuration, trial 1, is ")
    assert rec.reason.endswith("faster than the defaults, which is within the noise")
    assert rec.best_vs_baseline is not None and rec.best_vs_baseline.verdict == "within noise"


def test_keep_the_defaults_sentence_when_the_defaults_are_best() -> None:
    cands = _candidates([("base", 80, 2, 0, True), ("a", 76, 2, 2, True)])
    rec = _recommend(cands)
    assert rec.best == "base" and rec.recommended == "base"
    assert rec.reason.startswith(
        "keep the defaults: no configuration beat the defaults by more than the noise (±"
    )
    assert "and the 1% minimum gain" in rec.reason
    alone = _recommend(cands[:1])
    assert alone.reason == "keep the defaults: no other configuration was measured"


def test_a_real_gain_is_recommended() -> None:
    cands = _candidates([("base", 80, 2, 0, True), ("x", 86.4, 2, 3, True), ("y", 80, 1, 1, False)])
    rec = _recommend(cands)
    assert (rec.best, rec.recommended, rec.keep_defaults) == ("x", "x", False)
    assert rec.reason.startswith("trial 1 (3 settings changed) is ")
    assert "faster than the defaults" in rec.reason
    assert (
        rec.recommended_vs_baseline is not None and rec.recommended_vs_baseline.verdict == "better"
    )


def test_the_simplest_equivalent_configuration_wins() -> None:
    cands = [
        Candidate("base", _estimate(80.0, 0.01, dof=20), 0),
        Candidate("x", _estimate(86.4, 0.01, dof=20), 3, confirmed=True, label="trial 7"),
        Candidate("s", _estimate(85.9, 0.01, dof=20), 2, confirmed=True, label="trial 3"),
        Candidate("t", _estimate(83.0, 0.03, dof=20), 1, confirmed=True, label="trial 5"),
        Candidate("u", _estimate(80.5, 0.01, dof=20), 1, confirmed=True, label="trial 9"),
    ]
    rec = _recommend(cands)
    assert rec.best == "x"
    # t and u are simpler and within noise of x, but neither beats the defaults
    # significantly; s does, with one change fewer than x.
    assert set(rec.equivalent) == {"x", "s", "t"}
    assert rec.recommended == "s"
    assert rec.reason.startswith("trial 3 (2 settings changed) is 7.4% ± ")
    assert "within noise of the best, trial 7 (3 settings changed;" in rec.reason
    assert rec.reason.endswith("fewer changes win")
    # Ties in changes go to the better mean.
    tie = [*cands[:2], Candidate("s2", _estimate(86.2, 0.01, dof=20), 2, True), cands[2]]
    assert _recommend(tie).recommended == "s2"


def test_an_unconfirmed_lucky_launch_is_neither_best_nor_recommended() -> None:
    cands = _candidates([("base", 80, 2, 0, True), ("lucky", 96, 1, 1, False)])
    rec = _recommend(cands)
    assert rec.best == "base" and rec.recommended == "base"
    assert rec.reason.startswith("keep the defaults: no other configuration was confirmed")
    assert "trial 1 looked 2" in rec.reason and "not launched again" in rec.reason
    # Once confirmed, it competes.
    confirmed = [c if c.key == "base" else Candidate(c.key, c.estimate, 1, True) for c in cands]
    assert _recommend(confirmed).recommended == "lucky"


def test_a_gain_below_min_gain_keeps_the_defaults() -> None:
    tight = ConfigEstimate(100.5, 0.05, math.inf, 5, 15, var_between=0.0025, dof_between=math.inf)
    base = ConfigEstimate(100.0, 0.05, math.inf, 5, 15, var_between=0.0025, dof_between=math.inf)
    rec = _recommend([Candidate("base", base, 0), Candidate("a", tight, 2, True, "trial 4")])
    assert rec.keep_defaults and rec.best == "a"
    assert "less than the 1% minimum gain" in rec.reason


def test_recommend_for_a_latency() -> None:
    cands = _candidates(
        [("base", 100, 2, 0, True), ("fast", 90, 2, 2, True), ("slow", 120, 2, 1, True)]
    )
    rec = _recommend(cands, direction="minimize")
    assert rec.recommended == "fast"
    assert "faster than the defaults" in rec.reason


# ------------------------------------------------------------- whole studies, simulated


def _study(
    seed: int,
    gain: float,
    budget: int,
    between: float,
    within: float,
    found_at: int,
    screen: float = 0.8,
):
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
    return _recommend(cands), used


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
