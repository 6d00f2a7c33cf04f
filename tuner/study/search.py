"""What to launch next: a model of each setting's effect, and proposals near the incumbent.

Launches are expensive (a model load each), so the sweep does not leave every proposal
to a black-box sampler. It fits a **main-effects model** to every measured launch: the
objective's logarithm is a baseline plus one effect per non-default value of a param
(each setting speeds the server up or slows it down by a factor of its own). The prior
is sparse (most settings do nothing at all), each launch weighs by its measured noise,
and the posterior is sampled by Gibbs sampling.

A proposal is the stack when the model believes in it (tuner/study/stacking.py: the
incumbent with every launched value that looks good), else the incumbent (the
configuration the sweep last confirmed as a gain) with a few settings changed: values
not yet screened first (launched fewer than SCREEN_REPEATS times), several per launch (a
group test), as many as it takes to screen them all within the patience; among those,
the neighbour most likely to beat the incumbent by min_gain. A value seen to help
elsewhere is carried onto the incumbent; one seen to hurt is left alone; a setting that
may be what makes the incumbent fast is changed only alone. ``simplify`` drops the
settings the model finds idle, for the launch before the answer. Interactions are not
modelled; when no neighbour is left, the sweep asks optuna's TPE. Pure: no I/O, numbers
in, a proposal out.
docs/search.md has the whole method.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tuner.space.settings import canonical_value, settings_from_params, violated_constraints
from tuner.space.spec import DEFAULT, ParamSpec, Scalar, SpaceSpec
from tuner.study import stacking

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
MAX_CANDIDATES = 20_000
"""Neighbours scored per proposal at most; a wider neighbourhood is sampled at random."""
SCREEN_REPEATS = 2
"""Launches a value is tried in (with different partners) before it counts as screened.
Once, at 1% noise, a 2.5% gain shared with two passengers is rarely told from noise."""


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


def neighbours(
    spec: SpaceSpec,
    center: Mapping[str, Scalar],
    max_changes: int,
    working: frozenset[str] = frozenset(),
    *,
    rng: np.random.Generator | None = None,
    limit: int = MAX_CANDIDATES,
    frozen: frozenset[str] = frozenset(),
) -> list[dict[str, Scalar]]:
    """The configurations one step from ``center`` (constraints kept).

    A step changes 1..max_changes params that ``center`` leaves at default or sets to a
    value that does nothing, or it changes one ``working`` param alone. Replacing a
    setting that may be what makes ``center`` fast while changing others would measure
    only the difference, and a launch that moves nothing would clear none of them.
    ``frozen`` params never change (the probe found they cannot help).
    More than ``limit`` steps (a space of many params): ``limit`` of them drawn with
    ``rng``, single changes always included.
    """
    base = {name: center.get(name, DEFAULT) for name in spec.params}
    moves = {
        name: [v for v in levels(p) if canonical_value(v) != canonical_value(base[name])]
        for name, p in spec.params.items()
        if name not in frozen
    }
    groups: list[tuple[str, ...]] = [(name,) for name in sorted(working & moves.keys())]
    free = sorted(name for name in moves if name not in working)
    for k in range(1, max_changes + 1):
        groups.extend(itertools.combinations(free, k))
    total = sum(math.prod(len(moves[n]) for n in names) for names in groups)
    if total > limit:
        return _sampled_steps(spec, base, moves, groups, rng or np.random.default_rng(), limit)
    out: list[dict[str, Scalar]] = []
    for names in groups:
        for values in itertools.product(*(moves[n] for n in names)):
            candidate = {**base, **dict(zip(names, values, strict=True))}
            if not violated_constraints(spec, candidate):
                out.append(candidate)
    return out


def _sampled_steps(
    spec: SpaceSpec,
    base: dict[str, Scalar],
    moves: dict[str, list[Scalar]],
    groups: list[tuple[str, ...]],
    rng: np.random.Generator,
    limit: int,
) -> list[dict[str, Scalar]]:
    """Every single change, then random multi-change steps (duplicates dropped)."""
    picks: list[tuple[tuple[str, ...], list[Scalar]]] = [
        (g, [v]) for g in groups if len(g) == 1 for v in moves[g[0]]
    ]
    for _ in range(2 * limit):
        names = groups[int(rng.integers(len(groups)))]
        picks.append((names, [moves[n][int(rng.integers(len(moves[n])))] for n in names]))
    seen: set[tuple[tuple[str, str], ...]] = set()
    out: list[dict[str, Scalar]] = []
    for names, values in picks:
        key = tuple(sorted((n, canonical_value(v)) for n, v in zip(names, values, strict=True)))
        if key in seen:
            continue
        seen.add(key)
        candidate = {**base, **dict(zip(names, values, strict=True))}
        if not violated_constraints(spec, candidate):
            out.append(candidate)
        if len(out) >= limit:
            break
    return out


def group_size(untried: int, trials_left: int, max_changes: int) -> int:
    """How many untried values one launch should try so all are tried before the plateau.

    ``trials_left`` is the search trials the patience still allows without a gain.
    """
    if untried <= 0:
        return 1
    return max(1, min(max_changes, -(-untried // max(trials_left, 1))))


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


def propose(
    spec: SpaceSpec,
    observations: Sequence[Observation],
    incumbent: Mapping[str, Scalar],
    *,
    exclude: set[str],
    rng: np.random.Generator,
    min_gain: float = 0.01,
    max_changes: int = 3,
    trials_left: int = 1,
    frozen: frozenset[str] = frozenset(),
) -> dict[str, Scalar] | None:
    """The next configuration to launch near ``incumbent``, or None when none is left.

    0. The stack (``stacking.stacked``), when not launched yet and the model gives it
       ``stacking.STACK_CHANCE`` or more of beating the incumbent by ``min_gain``.
    1. Values launched fewer than SCREEN_REPEATS times are tried first (never launched
       before launched once), as many per launch as it takes to screen them all within
       the patience (``trials_left`` search trials), up to ``max_changes``; one more
       change may carry a value that looked good elsewhere. A working param's untried
       value goes alone, in a launch of its own.
    2. Among the neighbours at least half as likely to beat the incumbent by
       ``min_gain`` as the likeliest (the share of posterior draws in which their
       effects add up to more), the one trying the most untried values wins; then the
       likelier; then fewer changes; then chance.

    ``exclude`` holds configuration hashes already launched, queued or refused;
    ``frozen`` params keep the incumbent's value (tuner/study/probing.py freezes the NCCL
    params its probe finds cannot help).
    """
    model = EffectModel(spec)
    model.observe(observations)
    draws = model.draws(rng)
    stack = stacking.stacked(spec, model, draws, incumbent, min_gain=min_gain, frozen=frozen)
    if stack is not None and settings_from_params(spec, stack).config_hash not in exclude:
        gain = (model.features(stack) - model.features(incumbent)) @ draws.T
        if float((gain > math.log1p(min_gain)).mean()) >= stacking.STACK_CHANCE:
            return stack  # before any untried value: what the launches so far add up to
    worth = setting_worth(model, draws, incumbent, min_gain)
    working = frozenset(name for name, p in worth.items() if p >= WORKING)
    tried = model.times_tried()
    center = model.features(incumbent)
    reachable = {
        model.index[(name, canonical_value(v))]
        for name, values in model.levels.items()
        if name not in frozen
        for v in values[1:]
        if canonical_value(v) != canonical_value(incumbent.get(name, DEFAULT))
    }
    working_columns = {j for (name, _), j in model.index.items() if name in working}
    untried_alone = {j for j in reachable if tried[j] == 0 and j in working_columns}
    under = tried < SCREEN_REPEATS
    size = group_size(
        sum(1 for j in reachable if under[j]) - len(untried_alone),
        trials_left - len(untried_alone),
        max_changes,
    )
    candidates = [
        c
        for c in neighbours(spec, incumbent, size + 1, working, rng=rng, frozen=frozen)
        if settings_from_params(spec, c).config_hash not in exclude
    ]
    if not candidates:
        return None
    rows = np.array([model.features(c) for c in candidates])
    new = (rows > 0) & (center == 0)
    untried = (new & under).sum(axis=1)
    never = (new & (tried == 0)).sum(axis=1)
    # At most ``size`` values not yet screened per launch; when every neighbour left holds
    # more (a small space near its end), those holding the fewest.
    keep = untried <= max(size, int(untried.min()))
    candidates = [c for c, k in zip(candidates, keep, strict=True) if k]
    rows, new, untried, never = rows[keep], new[keep], untried[keep], never[keep]
    p_gain = (((rows - center) @ draws.T) > math.log1p(min_gain)).mean(axis=1)
    changes = (rows != center).sum(axis=1)
    # A working param's untried value can only be tried alone: such a launch counts as a
    # full group, and is not held to the others' chance of a gain (replacing what may make
    # the incumbent fast rarely looks likely to gain, yet is the only way to try it).
    alone = (new[:, sorted(untried_alone)].sum(axis=1) > 0) if untried_alone else None
    score = untried if alone is None else np.where(alone, size, untried)
    noise = rng.random(len(candidates))
    eligible = [
        i
        for i in range(len(candidates))
        if p_gain[i] >= 0.5 * p_gain.max() or (alone is not None and alone[i])
    ]
    best = min(
        eligible,
        key=lambda i: (
            -int(score[i]),
            -int(never[i]),
            -round(float(p_gain[i]), 6),
            int(changes[i]),
            noise[i],
        ),
    )
    return candidates[best]


def simplify(
    spec: SpaceSpec,
    observations: Sequence[Observation],
    config: Mapping[str, Scalar],
    *,
    rng: np.random.Generator,
    min_gain: float = 0.01,
    keep: frozenset[str] = frozenset(),
) -> dict[str, Scalar] | None:
    """``config`` with the settings the model finds idle reset to default, or None.

    Settings are dropped, the least useful first, while the posterior probability
    that the dropped ones together were worth more than half of ``min_gain`` stays
    below WORKING. A launch that sets several untried values credits them all; this
    is the configuration to launch before the answer, so that the recommendation can
    be the simplest one that is as fast. ``keep`` names settings shown to work by other
    means (the probe measured each alone): values only ever launched together cannot be
    told apart by the model, so it would call each of them idle.
    """
    model = EffectModel(spec)
    model.observe(observations)
    draws = model.draws(rng)
    worth = setting_worth(model, draws, config, min_gain)
    threshold = math.log1p(min_gain) / 2
    dropped: list[str] = []
    for name in sorted((n for n in worth if n not in keep), key=lambda n: worth[n]):
        columns = [model.index[(n, canonical_value(config[n]))] for n in [*dropped, name]]
        if float((draws[:, columns].sum(axis=1) > threshold).mean()) >= WORKING:
            break
        dropped.append(name)
    if not dropped:
        return None
    simpler = {**config, **{name: DEFAULT for name in dropped}}
    return None if violated_constraints(spec, simpler) else simpler
