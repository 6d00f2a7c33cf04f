"""tuner/stats/final.py: the answer's test on fresh launches, its level under selection."""

from __future__ import annotations

import numpy as np
import pytest

from tuner import stats
from tuner.stats import LaunchEstimate
from tuner.stats.looks import LookPlan

CONFIDENCE = 0.95
MIN_GAIN = 0.01


def _launch(rng: np.random.Generator, mean: float, between: float, within: float) -> LaunchEstimate:
    """A launch of 3 rounds: the launch's own mean moved by ``between``, rounds by ``within``."""
    center = mean * (1 + rng.normal(0, between))
    return stats.launch_estimate(list(center * (1 + rng.normal(0, within, size=3))))


def _flat_study(rng: np.random.Generator, noise: float, configs: int) -> tuple[float, float, bool]:
    """A study where nothing matters: 2 baseline launches, ``configs`` configurations launched
    once each, the luckiest chosen. Returns (its gain over the baseline on the launch that
    chose it, its gain on the final comparison's fresh launches, whether that passes)."""
    opening = [_launch(rng, 100.0, noise, noise) for _ in range(2)]
    singles = [_launch(rng, 100.0, noise, noise) for _ in range(configs)]
    lucky = max(singles, key=lambda launch: launch.mean)
    base = sum(launch.mean for launch in opening) / len(opening)
    fresh_c = [_launch(rng, 100.0, noise, noise) for _ in range(2)]
    fresh_b = [_launch(rng, 100.0, noise, noise) for _ in range(2)]
    groups = [[*opening, *fresh_b], [lucky, *fresh_c], *([s] for s in singles if s is not lucky)]
    final = stats.final_comparison(
        "c",
        fresh_c,
        fresh_b,
        opening,
        stats.final_noise(groups),
        direction="maximize",
        min_gain=MIN_GAIN,
        confidence=CONFIDENCE,
    )
    return lucky.mean / base - 1, final.gain.gain, final.passed


@pytest.mark.parametrize("noise", [0.01, 0.03])
def test_the_luckiest_of_many_looks_faster_on_its_own_launch_never_on_fresh_ones(
    noise: float,
) -> None:
    rng = np.random.default_rng(7)
    runs = [_flat_study(rng, noise, configs=10) for _ in range(600)]
    chosen_on = float(np.mean([r[0] for r in runs]))
    fresh = float(np.mean([r[1] for r in runs]))
    passed = sum(r[2] for r in runs)
    # The winner's curse: the best of 10 draws sits ~1.5 launch sds above the truth on the
    # launch that chose it; fresh launches of it are unbiased, and their test keeps its level.
    assert chosen_on > 1.2 * noise
    assert abs(fresh) < 0.2 * noise
    assert passed / len(runs) <= 0.025  # at most (1 - confidence) / 2


def test_a_real_gain_passes_when_the_fresh_launches_show_it_above_min_gain() -> None:
    rng = np.random.default_rng(3)
    passed = 0
    for _ in range(200):
        opening = [_launch(rng, 100.0, 0.01, 0.01) for _ in range(2)]
        fresh_c = [_launch(rng, 108.0, 0.01, 0.01) for _ in range(2)]
        fresh_b = [_launch(rng, 100.0, 0.01, 0.01) for _ in range(2)]
        found = stats.final_comparison(
            "c",
            fresh_c,
            fresh_b,
            opening,
            stats.final_noise([[*opening, *fresh_b], fresh_c]),
            direction="maximize",
            min_gain=MIN_GAIN,
            confidence=CONFIDENCE,
        )
        passed += found.passed
        assert found.lower < found.gain.gain < found.upper
    assert passed >= 190  # 8% at 1% noise, two launches a side: nearly always


def _exact(value: float) -> LaunchEstimate:
    return LaunchEstimate(mean=value, se=value * 0.001, n=3)


def test_a_linear_drift_falls_on_both_sides_of_c_b_b_c_alike_and_is_reported() -> None:
    # Launch k runs at 100 x (1 + 0.01 k): the opening baseline at k = 0, 1; the final
    # comparison at k = 10..13 as C B B C. Nothing differs but the time.
    times = {"opening": [0, 1], "c": [10, 13], "b": [11, 12]}
    at = {name: [_exact(100.0 * (1 + 0.01 * k)) for k in ks] for name, ks in times.items()}
    repeats = [[_exact(100.0), _exact(100.3)], [_exact(100.0), _exact(99.7)]]  # 0.3% noise
    found = stats.final_comparison(
        "c",
        at["c"],
        at["b"],
        at["opening"],
        stats.final_noise([*repeats, at["opening"]]),
        direction="maximize",
        min_gain=MIN_GAIN,
        confidence=CONFIDENCE,
    )
    assert found.gain.gain == pytest.approx(0.0, abs=1e-12)  # the drift cancelled out
    assert not found.passed
    assert found.drift is not None and found.drift.rel_diff == pytest.approx(0.11 / 1.005)
    assert found.drift_significant
    # A drift of ~11% is larger than min_gain: gains below it cannot be told from it.
    assert found.undecidable_below == pytest.approx(abs(found.drift.rel_diff))
    assert found.bar == pytest.approx(found.undecidable_below)


def test_the_noise_used_is_never_smaller_than_what_the_launches_show() -> None:
    # Every configuration's repeats scatter by about 4%, well above the 1% prior: the
    # shrunk estimate sits below the measured one, and the interval is the measured one's.
    rng = np.random.default_rng(11)
    groups = [[_launch(rng, 100.0, 0.04, 0.001) for _ in range(4)] for _ in range(4)]
    noise = stats.final_noise(groups)
    assert noise.measured is not None and noise.measured.rel_sd > noise.shrunk.rel_sd
    assert noise.rel_sd == noise.measured.rel_sd
    fresh_c, fresh_b = groups[0][:2], groups[1][:2]
    found = stats.final_comparison(
        "c", fresh_c, fresh_b, (), noise,
        direction="maximize", min_gain=MIN_GAIN, confidence=CONFIDENCE,
    )  # fmt: skip
    measured_only = stats.compare(
        stats.config_estimate(fresh_c, noise.measured),
        stats.config_estimate(fresh_b, noise.measured),
        direction="maximize",
        min_gain=MIN_GAIN,
        confidence=CONFIDENCE,
    )
    assert found.gain.noise_rel == pytest.approx(measured_only.noise_rel)
    assert found.drift is None  # no opening launches given: no drift to say


def test_several_final_comparisons_share_the_error_bonferroni() -> None:
    launches_c = [_exact(106.0), _exact(106.4)]
    launches_b = [_exact(100.0), _exact(100.5)]
    noise = stats.final_noise([launches_c, launches_b])

    def at(m: int) -> stats.FinalComparison:
        return stats.final_comparison(
            "c", launches_c, launches_b, (), noise,
            direction="maximize", min_gain=MIN_GAIN, confidence=CONFIDENCE, comparisons=m,
        )  # fmt: skip

    one, three = at(1), at(3)
    assert one.gain.confidence == pytest.approx(0.95)
    assert three.gain.confidence == pytest.approx(1 - 0.05 / 3)
    assert three.gain.noise_rel > one.gain.noise_rel and three.comparisons == 3


def _sequential(
    rng: np.random.Generator, gain: float, noise: float, plan: LookPlan, most_looks: int
) -> str:
    """A final comparison judged at each look of ``plan`` while it is open, up to
    ``most_looks``: "passed", "refuted" or "open" at the end."""
    sizes = [plan.size(j) for j in range(1, most_looks + 1)]
    others = [[_launch(rng, 100.0, noise, noise) for _ in range(2)] for _ in range(6)]
    c = [_launch(rng, 100.0 * (1 + gain), noise, noise) for _ in range(sizes[-1])]
    b = [_launch(rng, 100.0, noise, noise) for _ in range(sizes[-1])]
    for k in sizes:
        found = stats.final_comparison(
            "c", c[:k], b[:k], (), stats.final_noise([*others, c[:k], b[:k]]),
            direction="maximize", min_gain=MIN_GAIN, confidence=CONFIDENCE, plan=plan,
        )  # fmt: skip
        if found.passed:
            return "passed"
        if found.refuted:
            return "refuted"
    return "open"


def test_every_look_together_keeps_the_answers_error_rate() -> None:
    rng = np.random.default_rng(11)
    # The worst case for a false gain: the true gain exactly at the bar, judged at up to
    # five looks (2, 4, then 6, 8 and 10 a side, as resumed studies would).
    plan = LookPlan(first=2, sized=4, target_gain=0.06)
    ends = [_sequential(rng, MIN_GAIN, 0.02, plan, 5) for _ in range(1500)]
    assert ends.count("passed") / 1500 <= (1 - CONFIDENCE) / 2
    # The shares of the error rate: a quarter, a half, then an eighth, a sixteenth, ...
    levels = [plan.level(CONFIDENCE, j) for j in (1, 2, 3, 4)]
    assert levels == pytest.approx([1 - 0.05 / 4, 1 - 0.05 / 2, 1 - 0.05 / 8, 1 - 0.05 / 16])
    assert sum(plan.share(j) for j in range(1, 60)) == pytest.approx(1.0)
    single = LookPlan(first=2, sized=2)
    assert single.share(1) == 0.75 and sum(single.share(j) for j in range(1, 60)) == 1.0


def test_the_sized_look_settles_what_the_first_leaves_open() -> None:
    # A real 6% gain at 2% noise: 2 launches a side often leave it open; the sized look
    # (6 a side) confirms most of them. A flat candidate is never passed; one that is 3%
    # slower is refuted (its interval below the 1% bar) most of the time, while at 2%
    # noise a flat one mostly stays open: 12 launches cannot rule out 1% there.
    rng = np.random.default_rng(5)
    plan = LookPlan(first=2, sized=6, target_gain=0.06)
    first_only = [_sequential(rng, 0.06, 0.02, plan, 1) for _ in range(300)]
    sized = [_sequential(rng, 0.06, 0.02, plan, 2) for _ in range(300)]
    assert sized.count("passed") > first_only.count("passed") + 60
    assert sized.count("passed") / 300 >= 0.7
    flat = [_sequential(rng, 0.0, 0.02, plan, 2) for _ in range(300)]
    assert flat.count("passed") <= 3 and flat.count("open") > flat.count("refuted")
    slower = [_sequential(rng, -0.03, 0.02, plan, 2) for _ in range(300)]
    assert slower.count("refuted") / 300 >= 0.6


def test_latency_gains_are_signed_so_that_lower_is_better() -> None:
    faster = [_exact(90.0), _exact(90.2)]
    slower = [_exact(100.0), _exact(100.3)]
    found = stats.final_comparison(
        "c", faster, slower, slower, stats.final_noise([faster, slower]),
        direction="minimize", min_gain=MIN_GAIN, confidence=CONFIDENCE,
    )  # fmt: skip
    assert found.gain.gain == pytest.approx((100.15 - 90.1) / 100.15)
    assert found.lower > 0


def test_a_comparison_needs_launches_on_both_sides() -> None:
    noise = stats.final_noise([[_exact(100.0), _exact(100.2)]])
    with pytest.raises(ValueError, match="a launch of the candidate and of the defaults"):
        stats.final_comparison(
            "c", [], [_exact(100.0)], (), noise,
            direction="maximize", min_gain=MIN_GAIN, confidence=CONFIDENCE,
        )  # fmt: skip
