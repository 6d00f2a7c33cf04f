"""The futility stop: end the search when the model rules out every untried neighbour.

The plateau rule waits ``stop.patience`` search trials without a significant gain. Often
the model of the settings' effects (tuner/study/effects/model.py) knows sooner:
once every value has been launched and cleared, no change to the incumbent is likely to
beat it by ``min_gain``. ``chances_of_gain`` puts a number on that: for every untried
neighbour of the incumbent (``neighbours``, the neighbourhood proposals come
from: up to ``max_changes`` changes, a working setting changed alone, constraints kept)
the share of posterior draws in which its effects add up to more than ``min_gain``, and
the largest of these. The study stops (reason ``futile``) when that is below
``stop.futility`` and ``MIN_TRIALS`` search trials have run since the last gain
(tuner/study/policy/stops.py ``futile``). An
untried value keeps its prior (one in five has an effect, sd 5%), worth about an 8%
chance on its own, above the default threshold of 5%: the search never stops while a
value is untried, nor on the prior alone. docs/search.md ("Stopping early") has the
rule, docs/measurements/futility-stop.md its measurement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tuner.space.settings import settings_from_params
from tuner.space.spec import Scalar, SpaceSpec
from tuner.study.effects.model import EffectModel, Observation, working_params
from tuner.study.effects.neighbours import neighbours

DRAWS = 1024
"""Posterior draws behind the check. The largest of many neighbours' chances is read off
them, and Monte Carlo noise inflates a maximum: the draws must be many enough that the
maximum's spread stays well under the threshold (a few points at 1024; at 128 it can pass
the default 5% threshold on a flat study)."""
MIN_TRIALS = 5
"""Search trials since the last gain before the model may stop the search: a setting can be
masked by a loser launched with it, and the next few search launches, which try it in
other company, are what unmask it; fewer lost such settings, and a study still saves up to
patience - 5 launches (docs/measurements/futility-stop.md)."""


def chances_of_gain(
    spec: SpaceSpec,
    observations: Sequence[Observation],
    incumbent: Mapping[str, Scalar],
    *,
    exclude: set[str],
    rng: np.random.Generator,
    min_gain: float,
    max_changes: int,
    frozen: frozenset[str] = frozenset(),
    launched: Sequence[Mapping[str, Scalar]] = (),
) -> tuple[float, list[float]]:
    """The largest posterior probability, over the untried neighbours of ``incumbent``
    (``neighbours``; ``exclude`` holds the configuration hashes already launched or
    queued), that one beats it by more than ``min_gain`` (0.0 when none is left); and,
    from the same draws, each ``launched`` configuration's (the last look:
    tuner/study/policy/single_goal.py).

    ``frozen`` params (the probe found they cannot help) are not changed, as in the search.
    """
    model = EffectModel(spec)
    model.observe(observations)
    draws = model.draws(rng, DRAWS)
    working = working_params(model, draws, incumbent, min_gain)
    candidates = [
        c
        for c in neighbours(spec, incumbent, max_changes, working, rng=rng, frozen=frozen)
        if settings_from_params(spec, c).config_hash not in exclude
    ]
    untried = model.chances_of_gain(draws, candidates, incumbent, min_gain)
    chances = model.chances_of_gain(draws, launched, incumbent, min_gain)
    return float(untried.max(initial=0.0)), [float(x) for x in chances]
