"""Noise as a user measures it: ``--launch-noise`` and ``--round-noise`` mapped onto the engine.

A user describes a server's noise by two figures: how much a launch's mean throughput moves
from one launch to the next (between-launch relative sd) and how much one benchmark round's
mean moves within a launch (within-launch relative sd of a round). The engine has three terms
instead (:meth:`tuner.sim.engine.Engine._noise`): a log-normal speed factor per launch, an
AR(1) drift and i.i.d. jitter per step. This module turns the two figures into those terms.

- Between launches: throughput goes as 1 / factor, so ``launch_sd`` is chosen so that the
  relative sd of 1 / exp(N(0, launch_sd)) is exactly the figure asked for.
- Within a launch: per-step jitter averages out over a round's hundreds of steps (1.5% per
  step is 0.08% over 384 steps), and the profiles' slow drift (500-step memory) moves whole
  rounds together, so their scatter is mostly not seen within a launch but as a between-launch
  difference. A requested round sd therefore replaces the drift with a fast one, whose memory
  is a sixteenth of a round: consecutive rounds are then all but independent, as tuner's
  statistical model assumes (docs/statistics.md), and the drift's sd is set so that the mean
  over ``round_steps`` steps, jitter included, has the requested relative sd.

A launch on dummy weights (``--load-format dummy``) adds one more term: its throughput differs
from the real weights' by ``--dummy-bias`` and a per-launch log-normal part of relative sd
``--dummy-noise`` (:func:`dummy_throughput_factor`), which a study sees as a bias of its
screening launches plus extra between-launch noise.

docs/simulator.md ("Noise") gives the figures the real server shows through tuner's benchmark.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from tuner.sim.profiles import Profile
from tuner.sim.settings import SimSettings

ROUND_MEMORY_FRACTION = 1 / 16
"""The fast drift's memory (1 / (1 - phi) steps) as a fraction of a round."""


def launch_sigma(rel_sd: float) -> float:
    """The log-normal sigma whose throughput 1 / exp(N(0, sigma)) has relative sd ``rel_sd``."""
    return math.sqrt(math.log1p(rel_sd**2))


def ar1_mean_variance(phi: float, steps: int) -> float:
    """Variance of the mean of ``steps`` consecutive values of a stationary AR(1) process with
    correlation ``phi`` and unit variance: (1/n^2) * sum over i, j of phi^|i-j|."""
    n = steps
    if n < 1:
        raise ValueError("steps must be at least 1")
    if phi == 0:
        return 1.0 / n
    cross = phi * (n * (1 - phi) - (1 - phi**n)) / (1 - phi) ** 2  # sum_k (n-k) phi^k
    return (n + 2 * cross) / n**2


def round_drift(rel_sd: float, round_steps: int, step_noise_sd: float) -> tuple[float, float]:
    """(drift_sd, drift_phi) whose round mean over ``round_steps`` steps, plus the per-step
    jitter's share, has relative sd ``rel_sd``. Jitter alone may already exceed a tiny request;
    the drift is then off (sd 0) and the round sd is the jitter's."""
    memory = max(1.0, round_steps * ROUND_MEMORY_FRACTION)
    phi = 1.0 - 1.0 / memory
    left = rel_sd**2 - step_noise_sd**2 / round_steps
    if left <= 0:
        return 0.0, phi
    return math.sqrt(left / ar1_mean_variance(phi, round_steps)), phi


def with_noise(profile: Profile, settings: SimSettings) -> Profile:
    """The profile with ``--launch-noise`` / ``--round-noise`` applied (unchanged without)."""
    out = profile
    if settings.launch_noise is not None:
        out = replace(out, launch_sd=launch_sigma(settings.launch_noise))
    if settings.round_noise is not None:
        sd, phi = round_drift(settings.round_noise, settings.round_steps, out.step_noise_sd)
        out = replace(out, drift_sd=sd, drift_phi=phi)
    return out


def noise_json(profile: Profile) -> dict[str, float]:
    """The engine's noise terms (the ``noise`` field of ``GET /sim/config``)."""
    return {
        "launch_sd": profile.launch_sd,
        "drift_sd": profile.drift_sd,
        "drift_phi": profile.drift_phi,
        "step_noise_sd": profile.step_noise_sd,
    }


def dummy_throughput_factor(seed: int, bias: float, noise: float) -> float:
    """A dummy-weights launch's throughput over the real weights': (1 + bias) x a log-normal
    factor whose relative sd is ``noise``, drawn from the launch's seed.

    It draws from its own stream (seeded by the launch seed, not the engine's generator), so
    with the same ``--seed`` a dummy launch and a full one share their launch factor and step
    noise, and differ by exactly this factor.
    """
    if noise <= 0:
        return 1.0 + bias
    rng = random.Random(f"dummy-weights:{seed}")
    return (1.0 + bias) * math.exp(rng.gauss(0.0, launch_sigma(noise)))
