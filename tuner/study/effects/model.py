"""The model of what each setting did: a sparse main-effects model of every measured launch.

The objective's logarithm is a baseline plus one effect per non-default value of a param
(each setting speeds the server up or slows it down by a factor of its own). The prior
is sparse (most settings do nothing at all), each launch weighs by its measured noise,
and the posterior is sampled by Gibbs sampling. Pure numbers: no optuna, no store. The
policies that use it (tuner/study/policy/: the local search, the stack, simplification,
futility, limit steering) and the report read the same model. docs/search.md has the
method.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tuner.space.settings import canonical_value
from tuner.space.spec import DEFAULT, ParamSpec, Scalar, SpaceSpec

PRIOR_INCLUSION = 0.2
"""Prior probability that a setting has any effect at all: most knobs do nothing."""
PRIOR_EFFECT_SD = 0.05
"""Prior sd of an effect on log(objective) when there is one: a few %."""
PRIOR_BASELINE_SD = 10.0
"""The baseline's level is unknown before it is measured: a flat prior in practice."""
DRAWS = 128
"""Posterior draws behind each proposal's probabilities."""
CHAINS = 8
BURN_IN = 40
THIN = 2
"""Gibbs sampling: CHAINS chains, BURN_IN sweeps each before keeping every THIN-th."""
WORKING = 0.3
"""A setting whose posterior chance of being worth half of min_gain is this or more is
*working*: simplify() keeps it, and propose() changes it only alone (it may be what makes
the incumbent fast; changing it with others would confound them)."""
RANGE_LEVELS = 5
"""Points of an int or float range the local search tries (TPE explores the rest)."""


@dataclass(frozen=True)
class Observation:
    """One measured launch: its params, its objective mean and that mean's variance."""

    params: Mapping[str, Scalar]
    value: float
    var: float  # variance of ``value`` (absolute units), within and between launches


def levels(param: ParamSpec) -> list[Scalar]:
    """The values the local search moves a param between; ``default`` first."""
    if param.choices is not None:
        return [DEFAULT, *(c for c in param.choices if c != DEFAULT)]
    if param.int_range is not None:
        low, high = param.int_range
        points = _grid(float(low), float(high), param.log)
        step = int(param.step) if param.step and not param.log else 1
        values = sorted({low + round((p - low) / step) * step for p in points})
        return [DEFAULT, *(int(min(max(v, low), high)) for v in values)]
    assert param.float_range is not None
    low_f, high_f = param.float_range
    return [DEFAULT, *sorted(set(_grid(low_f, high_f, param.log)))]


def _grid(low: float, high: float, log: bool) -> list[float]:
    if high == low:
        return [low]
    if log:
        ratio = (high / low) ** (1 / (RANGE_LEVELS - 1))
        return [low * ratio**i for i in range(RANGE_LEVELS)]
    return [low + (high - low) * i / (RANGE_LEVELS - 1) for i in range(RANGE_LEVELS)]


class EffectModel:
    """Sparse Bayesian main-effects regression of log(objective) on one-hot settings.

    Column 0 is the baseline level; every other column is one (param, value) pair with
    value not ``default``. The prior is spike-and-slab: an effect is exactly zero with
    probability 1 - PRIOR_INCLUSION, else normal with sd PRIOR_EFFECT_SD. Sparsity is
    what makes a launch that changes two untried values and moves nothing clear both of
    them, as an engineer would read it; a Gaussian prior would only learn their sum.
    ``sign`` is +1 when the objective is maximised, -1 when minimised, so a larger
    score is always better.
    """

    def __init__(self, spec: SpaceSpec) -> None:
        self.spec = spec
        self.sign = 1.0 if spec.direction == "maximize" else -1.0
        self.levels = {name: levels(p) for name, p in spec.params.items()}
        self.index: dict[tuple[str, str], int] = {}
        for name, values in self.levels.items():
            for value in values[1:]:
                self.index.setdefault((name, canonical_value(value)), len(self.index) + 1)
        self.rows: list[np.ndarray] = []
        self.y: list[float] = []
        self.weights: list[float] = []

    @property
    def size(self) -> int:
        return len(self.index) + 1

    def features(self, params: Mapping[str, Scalar]) -> np.ndarray:
        """The one-hot row of a configuration; values off the model's levels count as unseen."""
        row = np.zeros(self.size)
        row[0] = 1.0
        for name, value in params.items():
            if name in self.levels and value != DEFAULT:
                column = self.index.get((name, canonical_value(value)))
                if column is not None:
                    row[column] = 1.0
        return row

    def chances_of_gain(
        self,
        draws: np.ndarray,
        configs: Sequence[Mapping[str, Scalar]],
        against: Mapping[str, Scalar],
        min_gain: float,
    ) -> np.ndarray:
        """Per configuration of ``configs``, the share of posterior ``draws`` in which its
        effects add up to more than ``min_gain`` over ``against``'s (empty for none)."""
        if not configs:
            return np.zeros(0)
        rows = np.array([self.features(c) for c in configs])
        gains = (rows - self.features(against)) @ draws.T
        chances: np.ndarray = (gains > math.log1p(min_gain)).mean(axis=1)
        return chances

    def observe(self, observations: Sequence[Observation]) -> None:
        """Add launches; each weighs by the inverse variance of its log value."""
        for obs in observations:
            if not (obs.value > 0 and math.isfinite(obs.value)):
                continue  # log of a zero throughput: a failed measurement, not a point
            self.rows.append(self.features(obs.params))
            self.y.append(self.sign * math.log(obs.value))
            self.weights.append(obs.value**2 / max(obs.var, 1e-12 * obs.value**2))

    def times_tried(self) -> np.ndarray:
        """How many launches set each column (column 0: every launch)."""
        if not self.rows:
            return np.zeros(self.size)
        counts: np.ndarray = np.asarray(self.rows).sum(axis=0)
        return counts

    def draws(self, rng: np.random.Generator, n: int = DRAWS) -> np.ndarray:
        """``n`` draws of every effect from the posterior, one row each, by Gibbs sampling.

        Several short chains, each started from "no effect anywhere" and visiting the
        columns in a new random order every sweep: two values launched together that
        explain one change then each get their turn to take the credit. Columns no
        launch has set are drawn from the prior directly.
        """
        out = np.zeros((n, self.size))
        tried = self.times_tried() > 0
        untried = np.flatnonzero(~tried)
        include = rng.random((n, len(untried))) < PRIOR_INCLUSION
        out[:, untried] = np.where(
            include, rng.normal(0.0, PRIOR_EFFECT_SD, (n, len(untried))), 0.0
        )
        if not self.rows:
            return out
        columns = np.flatnonzero(tried)
        x = np.array(self.rows)[:, columns]
        y = np.array(self.y)
        w = np.array(self.weights)
        xw = x * w[:, None]
        data_precision = (xw * x).sum(axis=0)
        prior_var = np.full(len(columns), PRIOR_EFFECT_SD**2)
        prior_var[0] = PRIOR_BASELINE_SD**2  # column 0, the baseline level, is always tried
        post_var = 1.0 / (data_precision + 1.0 / prior_var)
        log_prior_odds = math.log(PRIOR_INCLUSION / (1 - PRIOR_INCLUSION))
        log_shrink = 0.5 * np.log(post_var / prior_var)
        per_chain = -(-n // CHAINS)
        row = 0
        for _ in range(CHAINS):
            beta = np.zeros(len(columns))
            beta[0] = float(np.average(y, weights=w))
            residual = y - x @ beta
            for sweep in range(BURN_IN + per_chain * THIN):
                for j in rng.permutation(len(columns)):
                    residual += x[:, j] * beta[j]
                    mean = post_var[j] * float(xw[:, j] @ residual)
                    if j == 0:
                        keep = True
                    else:
                        log_odds = log_prior_odds + log_shrink[j] + 0.5 * mean**2 / post_var[j]
                        keep = math.log(rng.random() + 1e-300) < -math.log1p(
                            math.exp(-min(max(log_odds, -50.0), 50.0))
                        )
                    beta[j] = rng.normal(mean, math.sqrt(post_var[j])) if keep else 0.0
                    residual -= x[:, j] * beta[j]
                done = sweep + 1 - BURN_IN
                if done > 0 and done % THIN == 0 and row < n:
                    out[row, columns] = beta
                    row += 1
        return out


def setting_worth(
    model: EffectModel, draws: np.ndarray, params: Mapping[str, Scalar], min_gain: float
) -> dict[str, float]:
    """For each param ``params`` sets: the posterior probability that its value is worth
    more than half of ``min_gain`` (what resetting it to default would cost)."""
    threshold = math.log1p(min_gain) / 2
    worth = {}
    for name, value in params.items():
        column = model.index.get((name, canonical_value(value))) if value != DEFAULT else None
        if column is not None:
            worth[name] = float((draws[:, column] > threshold).mean())
    return worth


def working_params(
    model: EffectModel, draws: np.ndarray, params: Mapping[str, Scalar], min_gain: float
) -> frozenset[str]:
    """The params ``params`` sets whose value is *working* (``WORKING`` or more likely to be
    worth half of ``min_gain``): kept by simplification, changed only alone."""
    worth = setting_worth(model, draws, params, min_gain)
    return frozenset(name for name, p in worth.items() if p >= WORKING)
