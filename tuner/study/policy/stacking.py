"""The stack: the incumbent with every launched value the model of effects believes in.

At 1% noise a single 2.5% gain is about two launches' sd: a launch that holds it (with two
passengers) seldom passes the screening test, and a confirmation of it seldom reaches 95%.
Several such gains launched together add up to one that does. ``stacked`` builds that
configuration from the posterior draws of the model of effects (``EffectModel``); the local
search (tuner/study/policy/local_search.py)
launches it before any untried value once the model gives it ``STACK_CHANCE`` or more of
beating the incumbent by min_gain. It is a search trial like any other: it becomes the
incumbent only through the confirmation launches and the Welch test, so a stack of noise
is not a gain. docs/search.md ("The stack") has the rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from tuner.space.settings import canonical_value, violated_constraints
from tuner.space.spec import DEFAULT, Scalar, SpaceSpec
from tuner.study.effects.model import EffectModel

STACK_CHANCE = 0.3
"""The model's chance that the stack beats the incumbent by min_gain before it is launched."""
STACK_BAR = 0.1
"""A launched value joins the stack when its posterior mean effect is positive and its
chance of being worth half of min_gain more than the incumbent's value is this or more:
a low bar, since passengers cost nothing here and the stack's launch clears them."""


def stacked(
    spec: SpaceSpec,
    model: EffectModel,
    draws: np.ndarray,
    incumbent: Mapping[str, Scalar],
    *,
    min_gain: float,
    frozen: frozenset[str] = frozenset(),
) -> dict[str, Scalar] | None:
    """``incumbent`` with, per param, the launched value of largest posterior mean effect
    that passes STACK_BAR; None when no value does. ``draws`` are the model's posterior
    draws. Constraints broken: the least likely changes are undone until none is.
    ``frozen`` params keep the incumbent's value.
    """
    threshold = math.log1p(min_gain) / 2
    tried = model.times_tried()
    means = draws.mean(axis=0)
    base = {name: incumbent.get(name, DEFAULT) for name in spec.params}
    changes: list[tuple[float, str, Scalar]] = []  # (chance, param, value)
    for name, values in model.levels.items():
        if name in frozen:
            continue
        here = (
            model.index.get((name, canonical_value(base[name]))) if base[name] != DEFAULT else None
        )
        here_draws = draws[:, here] if here is not None else np.zeros(len(draws))
        here_mean = float(means[here]) if here is not None else 0.0
        best: tuple[float, float, Scalar] | None = None  # (mean, chance, value)
        for value in values[1:]:
            column = model.index[(name, canonical_value(value))]
            if column == here or tried[column] == 0:
                continue  # an untried value is the search's to try, not the stack's
            mean = float(means[column])
            chance = float((draws[:, column] - here_draws > threshold).mean())
            if chance >= STACK_BAR and mean > here_mean and (best is None or mean > best[0]):
                best = (mean, chance, value)
        if best is not None:
            changes.append((best[1], name, best[2]))
    changes.sort(key=lambda change: change[0])
    while changes:
        stack = {**base, **{name: value for _, name, value in changes}}
        if not violated_constraints(spec, stack):
            return stack
        changes.pop(0)
    return None
