"""tuner.sim.noise and the --launch-noise / --round-noise flags: noise as a user measures it.

The statistical checks drive the engine step by step (no server, no event loop) with fixed
seeds and many draws, and accept a band several standard errors wide.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from tuner.sim.cli import main
from tuner.sim.engine import Engine, launch_speed_factor
from tuner.sim.noise import ar1_mean_variance, round_drift, with_noise
from tuner.sim.profiles import PROFILES
from tuner.sim.settings import DEFAULT_ROUND_STEPS, ArgError, SimSettings, parse_settings

FLAT = PROFILES["flat"]


def noisy(*argv: str) -> tuple[SimSettings, Engine]:
    settings = parse_settings(["--profile", "flat", *argv], {})
    return settings, Engine(with_noise(FLAT, settings), settings, rng=random.Random(0))


# -- the flags -------------------------------------------------------------------------------
def test_the_flags_parse() -> None:
    s = parse_settings(
        ["--launch-noise", "0.01", "--round-noise", "0.005", "--round-steps", "96"], {}
    )
    assert (s.launch_noise, s.round_noise, s.round_steps) == (0.01, 0.005, 96)


def test_without_the_flags_the_profile_is_unchanged() -> None:
    s = parse_settings([], {})
    assert (s.launch_noise, s.round_noise, s.round_steps) == (None, None, DEFAULT_ROUND_STEPS)
    assert with_noise(FLAT, s) is FLAT


def test_zero_noise_is_allowed_and_silences_the_launch_factor() -> None:
    s = parse_settings(["--launch-noise", "0"], {})
    assert launch_speed_factor(with_noise(FLAT, s), random.Random(1)) == 1.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--launch-noise", "-0.01"], "--launch-noise is a relative sd and must be >= 0"),
        (["--round-noise", "-1"], "--round-noise is a relative sd and must be >= 0"),
        (["--launch-noise", "nan"], "must be >= 0"),
        (["--launch-noise", "2"], "a fraction, not a percentage: 0.02 is 2%"),
        (["--round-steps", "0"], "--round-steps must be positive"),
        (["--round-noise", "lots"], "invalid float value"),
    ],
)
def test_bad_values_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(ArgError, match=message):
        parse_settings(argv, {})


def test_a_negative_noise_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--port", "1", "--launch-noise", "-0.5"]) == 2
    assert "--launch-noise is a relative sd" in capsys.readouterr().err


# -- the mapping -----------------------------------------------------------------------------
def test_ar1_mean_variance_matches_the_double_sum() -> None:
    for phi, n in itertools.product((0.0, 0.5, 0.9, 0.99), (1, 2, 7, 40)):
        brute = sum(phi ** abs(i - j) for i in range(n) for j in range(n)) / n**2
        assert ar1_mean_variance(phi, n) == pytest.approx(brute)


def test_jitter_alone_can_exceed_a_tiny_round_noise() -> None:
    # 1.5% per step over 384 steps is 0.077% a round: asking for 0.05% turns the drift off
    assert round_drift(0.0005, 384, 0.015)[0] == 0.0
    assert round_drift(0.01, 384, 0.015)[0] > 0.01


@pytest.mark.parametrize("sd", [0.003, 0.02, 0.04])
def test_launches_show_the_requested_between_launch_sd(sd: float) -> None:
    settings, _ = noisy("--launch-noise", str(sd))
    profile = with_noise(FLAT, settings)
    rng = random.Random(7)
    speeds = [1.0 / launch_speed_factor(profile, rng) for _ in range(6000)]
    assert statistics.mean(speeds) == pytest.approx(1.0, abs=sd / 10)
    assert statistics.stdev(speeds) / statistics.mean(speeds) == pytest.approx(sd, rel=0.06)


def round_speeds(engine: Engine, rounds: int, steps: int) -> list[float]:
    """One request of ``steps`` tokens per round at concurrency 1: its mean speed (1 = noise
    free), from the step durations the engine plans."""
    engine.speed_factor = 1.0
    out = []
    for _ in range(rounds):
        engine.add(prompt_tokens=1, max_tokens=steps)
        total = 0.0
        while (plan := engine.schedule()) is not None:
            total += plan.duration / engine._step_time(1)
            engine.finish_step(plan)
        out.append(steps / total)
    return out


@pytest.mark.parametrize(("sd", "steps"), [(0.01, DEFAULT_ROUND_STEPS), (0.004, 96)])
def test_rounds_within_a_launch_show_the_requested_round_sd(sd: float, steps: int) -> None:
    variances = []
    for seed in range(100):  # 100 launches x 3 rounds: 200 dof, a standard error of ~5%
        settings = parse_settings(
            ["--profile", "flat", "--round-noise", str(sd), "--round-steps", str(steps)], {}
        )
        engine = Engine(with_noise(FLAT, settings), settings, rng=random.Random(seed))
        values = round_speeds(engine, 3, steps)
        variances.append(statistics.variance(values) / statistics.fmean(values) ** 2)
    assert math.sqrt(statistics.fmean(variances)) == pytest.approx(sd, rel=0.15)
