"""Simplification: the best configuration without the settings the model finds idle.

Before it answers, the sweep launches its best with every setting that did nothing reset
to default (tuner/study/policy/final_checks.py), so that the recommendation can be the
simplest configuration that is as fast. Pure: the model of effects
(tuner/study/effects/model.py) decides which settings are idle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from tuner.space.settings import canonical_value, violated_constraints
from tuner.space.spec import DEFAULT, Scalar, SpaceSpec
from tuner.study.effects.model import WORKING, EffectModel, Observation, setting_worth


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
