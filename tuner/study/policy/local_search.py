"""The local search: the next configuration near the incumbent, from the model of effects.

Launches are expensive (a model load each), so the sweep does not leave every proposal
to a black-box sampler. A proposal is the stack when the model believes in it
(tuner/study/policy/stacking.py: the incumbent with every launched value that looks good),
else the incumbent (the configuration the sweep last confirmed as a gain) with a few
settings changed: values not yet screened first (launched fewer than SCREEN_REPEATS
times), several per launch (a group test), as many as it takes to screen them all within
the patience; among those, the neighbour most likely to beat the incumbent by min_gain.
A value seen to help elsewhere is carried onto the incumbent; one seen to hurt is left
alone; a setting that may be what makes the incumbent fast is changed only alone.
Interactions are not modelled; when no neighbour is left, optuna's TPE proposes. Pure:
numbers in, a proposal out. The model is tuner/study/effects/model.py; docs/search.md has
the whole method.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from tuner.space.settings import canonical_value, settings_from_params
from tuner.space.spec import DEFAULT, Scalar, SpaceSpec
from tuner.study.effects.model import EffectModel, Observation, working_params
from tuner.study.effects.neighbours import neighbours
from tuner.study.policy import stacking

SCREEN_REPEATS = 2
"""Launches a value is tried in (with different partners) before it counts as screened.
Once, at 1% noise, a 2.5% gain shared with two passengers is rarely told from noise."""


def group_size(untried: int, trials_left: int, max_changes: int) -> int:
    """How many untried values one launch should try so all are tried before the plateau.

    ``trials_left`` is the search trials the patience still allows without a gain.
    """
    if untried <= 0:
        return 1
    return max(1, min(max_changes, -(-untried // max(trials_left, 1))))


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
    avoid: Callable[[Mapping[str, Scalar]], bool] | None = None,
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
    ``frozen`` params keep the incumbent's value (the probe freezes the NCCL params it
    finds cannot help: tuner/study/policy/probe_narrowing.py); ``avoid`` says which
    configurations not to propose (what failed launches refuse:
    tuner/study/policy/failed_before.py).
    """
    skip = avoid or (lambda params: False)
    model = EffectModel(spec)
    model.observe(observations)
    draws = model.draws(rng)
    stack = stacking.stacked(spec, model, draws, incumbent, min_gain=min_gain, frozen=frozen)
    if (
        stack is not None
        and settings_from_params(spec, stack).config_hash not in exclude
        and not skip(stack)
    ):
        chance = model.chances_of_gain(draws, [stack], incumbent, min_gain)[0]
        if chance >= stacking.STACK_CHANCE:
            return stack  # before any untried value: what the launches so far add up to
    working = working_params(model, draws, incumbent, min_gain)
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
        if settings_from_params(spec, c).config_hash not in exclude and not skip(c)
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
