"""The minimum detectable effect: the gain at which `compare` itself turns significant."""

from __future__ import annotations

import dataclasses
import random

import pytest

from tests.unit.stats.helpers import CONF, simulate_launch
from tuner.stats.compare import Direction, compare
from tuner.stats.estimates import NoiseEstimate, between_launch_variance, config_estimate
from tuner.stats.power import (
    detectable_gain,
    final_detectable_gain,
    typical_launches,
    with_requests,
    with_rounds,
)


def _noise(between: float, within: float, launches: int = 2, seed: int = 0) -> NoiseEstimate:
    rng = random.Random(seed)
    noise = between_launch_variance(
        [[simulate_launch(rng, 100.0, between, within) for _ in range(launches)]]
    )
    assert noise is not None
    return noise


def _significant(
    noise: NoiseEstimate, gain: float, k_a: int, k_b: int, direction: Direction = "maximize"
) -> bool:
    sign = 1.0 if direction == "maximize" else -1.0
    a = config_estimate(typical_launches(100.0 * (1 + sign * gain), 3, k_a), noise)
    b = config_estimate(typical_launches(100.0, 3, k_b), noise)
    return compare(a, b, direction=direction, min_gain=0.0, confidence=CONF).significant


@pytest.mark.parametrize("direction", ["maximize", "minimize"])
@pytest.mark.parametrize(("between", "within"), [(0.003, 0.003), (0.01, 0.02), (0.05, 0.1)])
def test_it_is_the_gain_compare_calls_significant(
    between: float, within: float, direction: Direction
) -> None:
    noise = _noise(between, within)
    mde = detectable_gain(
        noise,
        rounds=3,
        candidate_launches=2,
        baseline_launches=2,
        confidence=CONF,
        direction=direction,
    )
    assert mde.gain == mde.threshold  # power 50%: the threshold itself
    assert _significant(noise, mde.gain * (1 + 1e-6), 2, 2, direction)
    assert not _significant(noise, mde.gain * (1 - 1e-6), 2, 2, direction)


def test_it_shrinks_with_more_launches_of_either_side() -> None:
    noise = _noise(0.01, 0.01)

    def mde(k_a: int, k_b: int) -> float:
        return detectable_gain(
            noise, rounds=3, candidate_launches=k_a, baseline_launches=k_b, confidence=CONF
        ).gain

    assert mde(1, 2) > mde(2, 2) > mde(3, 2) > mde(6, 2)
    assert mde(2, 1) > mde(2, 2) > mde(2, 4)
    assert mde(2, 2) > mde(4, 4) > mde(8, 8)


def test_a_higher_power_or_confidence_asks_for_a_larger_gain() -> None:
    noise = _noise(0.01, 0.01)
    args = dict(rounds=3, candidate_launches=2, baseline_launches=2)
    half = detectable_gain(noise, confidence=0.95, **args)
    assert detectable_gain(noise, confidence=0.95, power=0.8, **args).gain > half.gain
    assert detectable_gain(noise, confidence=0.99, **args).gain > half.gain
    assert detectable_gain(noise, confidence=0.8, **args).gain < half.gain


def test_it_grows_with_the_noise_and_its_uncertainty() -> None:
    args = dict(rounds=3, candidate_launches=2, baseline_launches=2, confidence=CONF)
    quiet, loud = _noise(0.002, 0.002), _noise(0.05, 0.05)
    assert detectable_gain(quiet, **args).gain < detectable_gain(loud, **args).gain
    known = NoiseEstimate(
        var=1e-4, dof=1e6, n_configs=1, n_launches=2, within_var=1e-4, within_dof=1e6
    )
    unsure = NoiseEstimate(
        var=1e-4, dof=3.0, n_configs=1, n_launches=2, within_var=1e-4, within_dof=4.0
    )
    assert detectable_gain(known, **args).gain < detectable_gain(unsure, **args).gain
    # Known noise: the textbook z * sd of the difference, 1.96 * sqrt(2 * (1% + 1%/3) / 2),
    # a little more since the faster side's variance grows with its mean (delta method).
    textbook = 1.96 * (2 * (1e-4 + 1e-4 / 3) / 2) ** 0.5
    assert textbook < detectable_gain(known, **args).gain < 1.03 * textbook


def test_more_rounds_or_requests_lower_it_as_much_as_the_within_part_allows() -> None:
    args = dict(candidate_launches=2, baseline_launches=2, confidence=CONF)
    noise = NoiseEstimate(
        var=0.02**2, dof=50.0, n_configs=1, n_launches=2, within_var=0.05**2, within_dof=50.0,
        prior_rel_sd=0.05,
    )  # fmt: skip
    base = detectable_gain(noise, rounds=3, **args).gain
    assert detectable_gain(with_rounds(noise, 2.0), rounds=6, **args).gain < base
    assert detectable_gain(with_requests(noise, 2.0), rounds=3, **args).gain < base
    # Between-launch noise alone: more rounds hardly help.
    loud = NoiseEstimate(
        var=0.05**2, dof=50.0, n_configs=1, n_launches=2, within_var=0.002**2, within_dof=50.0
    )
    before = detectable_gain(loud, rounds=3, **args).gain
    after = detectable_gain(with_rounds(loud, 2.0), rounds=6, **args).gain
    assert after == pytest.approx(before, rel=0.01)


def test_more_launches_a_side_confirm_smaller_gains() -> None:
    noise = _noise(0.02, 0.02, launches=6, seed=3)
    two, four = (
        final_detectable_gain(noise, launches=k, rounds=3, confidence=0.995, power=0.95).gain
        for k in (2, 4)
    )
    assert 0 < four < two


def test_the_final_comparisons_noise_is_never_below_what_was_measured() -> None:
    # A measured noise above the prior-shrunk one: the detectable gain follows the wider.
    noise = _noise(0.04, 0.005, launches=4, seed=1)
    assert noise.observed_var is not None and noise.observed_var > noise.var
    found = final_detectable_gain(noise, launches=2, rounds=3, confidence=0.99)
    shrunk_only = detectable_gain(
        dataclasses.replace(noise, dof=noise.dof + 4, observed_var=None),
        rounds=3,
        candidate_launches=2,
        baseline_launches=2,
        confidence=0.99,
    )
    assert found.gain > shrunk_only.gain
