"""The stack: the incumbent with every launched value the model believes in.

Synthetic launches with known effects, as in test_search.py: gains seen in different
launches must end up together in one proposal; values never launched, values that did
nothing and broken constraints must not.
"""

from __future__ import annotations

import numpy as np

from tests.unit.test_search import BASE, SPEC, _changed, _draws, _obs, _spec, _with
from tuner.space.spec import DEFAULT
from tuner.study.effects.model import EffectModel
from tuner.study.policy import stacking
from tuner.study.policy.local_search import propose


def _spread_gains(value_a: float = 102.5, value_b: float = 102.5) -> list:  # type: ignore[type-arg]
    # A and B each seen to help in a group of their own (with a passenger); C, D and MAX
    # launched at no gain; MIN never launched.
    return [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on", C="x"), value_a),
        _obs(_with(B="on", D="on"), value_b),
        _obs(_with(C="y", MAX=8), 100.0),
        _obs(_with(D="on", MAX=32), 100.1),
    ]


def test_gains_seen_in_different_launches_are_stacked_onto_the_incumbent() -> None:
    model, draws = _draws(_spread_gains())
    stack = stacking.stacked(SPEC, model, draws, BASE, min_gain=0.01)
    assert stack is not None
    assert stack["A"] == "on" and stack["B"] == "on"
    assert stack["MIN"] == DEFAULT  # never launched: the search's to try, not the stack's
    assert stack["MAX"] == DEFAULT  # launched twice at no gain


def test_no_stack_when_nothing_helped() -> None:
    model, draws = _draws(_spread_gains(100.0, 99.9))
    assert stacking.stacked(SPEC, model, draws, BASE, min_gain=0.01) is None


def test_a_stack_that_breaks_a_constraint_drops_its_least_likely_change() -> None:
    spec = _spec(constraints=["MIN <= MAX"])
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(MIN=16), 104.0),
        _obs(_with(MIN=16), 104.1),
        _obs(_with(MAX=8, A="on"), 101.5),
    ]
    model = EffectModel(spec)
    model.observe(obs)
    draws = model.draws(np.random.default_rng(0), n=256)
    stack = stacking.stacked(spec, model, draws, BASE, min_gain=0.01)
    assert stack is not None
    assert stack["MIN"] == 16 and stack["MAX"] == DEFAULT  # 16 <= 8 broken: MAX=8 goes


def test_frozen_params_stay_out_of_the_stack() -> None:
    model, draws = _draws(_spread_gains())
    stack = stacking.stacked(SPEC, model, draws, BASE, min_gain=0.01, frozen=frozenset({"A"}))
    assert stack is not None and stack["A"] == DEFAULT and stack["B"] == "on"


def test_the_search_launches_the_stack_before_the_untried_value() -> None:
    for seed in range(3):
        proposal = propose(
            SPEC,
            _spread_gains(103.0, 103.0),
            BASE,
            exclude=set(),
            rng=np.random.default_rng(seed),
            trials_left=6,
        )
        assert proposal is not None
        assert {"A", "B"} <= _changed(proposal) and proposal["MIN"] == DEFAULT


def test_values_launched_once_are_screened_again_before_the_search_turns_to_tried_ones() -> None:
    # Every value launched once at no gain: the next proposal tries values launched once,
    # not a value already launched twice.
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on", B="on", C="x"), 100.0),
        _obs(_with(C="y", D="on", MIN=4), 100.1),
        _obs(_with(MIN=16, MAX=32), 99.9),
        _obs(_with(MAX=8), 100.0),
        _obs(_with(MAX=8, A="on"), 100.0),
    ]
    model, _ = _draws(obs)
    tried = model.times_tried()
    for seed in range(3):
        proposal = propose(
            SPEC, obs, BASE, exclude=set(), rng=np.random.default_rng(seed), trials_left=6
        )
        assert proposal is not None
        for name in _changed(proposal):
            column = model.index[(name, str(proposal[name]))]
            assert tried[column] < 2, (name, proposal[name])
