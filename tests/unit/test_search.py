"""The local search: levels, neighbours, the sparse effect model, proposals, simplification.

Synthetic launches with known effects: the model must credit the value that moved the
objective and clear the ones that did not, and the proposals must follow from that.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tuner.space.settings import settings_from_params
from tuner.space.spec import DEFAULT, parse_space
from tuner.study.effects.model import EffectModel, Observation, levels, setting_worth
from tuner.study.effects.neighbours import neighbours
from tuner.study.policy.local_search import group_size, propose
from tuner.study.policy.simplify import simplify


def _spec(metric: str = "output_throughput", constraints: list[str] | None = None):  # type: ignore[no-untyped-def]
    return parse_space(
        {
            "server": {"command": ["srv", "--port", "{port}"]},
            "params": {
                "A": {"env": "A", "choices": ["default", "on"]},
                "B": {"env": "B", "choices": ["default", "on"]},
                "C": {"env": "C", "choices": ["default", "x", "y"]},
                "D": {"env": "D", "choices": ["default", "on"]},
                "MIN": {"env": "NCCL_MIN_NCHANNELS", "choices": ["default", 4, 16]},
                "MAX": {"env": "NCCL_MAX_NCHANNELS", "choices": ["default", 8, 32]},
            },
            "constraints": constraints or [],
            "objective": {"metric": metric, "concurrency": 1},
        },
        Path("s.yaml"),
    ).spec


SPEC = _spec()
BASE = {name: DEFAULT for name in SPEC.params}


def _with(**changed: object) -> dict[str, object]:
    return {**BASE, **changed}


def _obs(params: dict[str, object], value: float, rel_sd: float = 0.004) -> Observation:
    return Observation(params=params, value=value, var=(rel_sd * value) ** 2)


def _draws(
    observations: list[Observation], spec=SPEC, seed: int = 0
) -> tuple[EffectModel, np.ndarray]:  # type: ignore[no-untyped-def]
    model = EffectModel(spec)
    model.observe(observations)
    return model, model.draws(np.random.default_rng(seed), n=256)


def _column(model: EffectModel, name: str, value: object) -> int:
    return model.index[(name, str(value))]


# --------------------------------------------------------------------------- levels


def test_levels_put_default_first_and_add_it_where_choices_lack_it() -> None:
    spec = parse_space(
        {
            "server": {"command": ["srv", "--port", "{port}"]},
            "params": {
                "P": {"env": "P", "choices": [4, "default", 8]},
                "Q": {"env": "Q", "choices": [1, 2]},
                "seqs": {"args": ["--max-num-seqs", "{value}"], "int": [16, 256], "log": True},
                "frac": {"args": ["--gpu-memory-utilization", "{value}"], "float": [0.8, 0.9]},
                "steps": {"args": ["--n", "{value}"], "int": [0, 100], "step": 10},
            },
        },
        Path("s.yaml"),
    ).spec
    assert levels(spec.params["P"]) == [DEFAULT, 4, 8]
    assert levels(spec.params["Q"]) == [DEFAULT, 1, 2]
    assert levels(spec.params["seqs"]) == [DEFAULT, 16, 32, 64, 128, 256]
    frac = levels(spec.params["frac"])
    assert frac[0] == DEFAULT and frac[1] == pytest.approx(0.8) and frac[-1] == pytest.approx(0.9)
    assert len(frac) == 6
    assert levels(spec.params["steps"]) == [DEFAULT, 0, 20, 50, 80, 100]


# --------------------------------------------------------------------------- neighbours


def test_neighbours_change_free_params_in_groups_and_working_ones_alone() -> None:
    center = _with(A="on")
    found = neighbours(SPEC, center, 2, working=frozenset({"A"}))
    changed = [{k for k in SPEC.params if c[k] != center[k]} for c in found]
    assert {"A"} in changed  # A back to default, alone
    assert all(len(c) <= 2 for c in changed)
    assert not any("A" in c and len(c) > 1 for c in changed)  # never A with others
    assert {"B", "D"} in changed
    # A free param set to an idle value may be changed along with others.
    free = neighbours(SPEC, center, 2, working=frozenset())
    assert any({k for k in SPEC.params if c[k] != center[k]} == {"A", "B"} for c in free)


def test_neighbours_keep_constraints() -> None:
    spec = _spec(constraints=["MIN <= MAX"])
    found = neighbours(spec, {name: DEFAULT for name in spec.params}, 2)
    assert found
    assert not any(c["MIN"] == 16 and c["MAX"] == 8 for c in found)
    assert any(c["MIN"] == 4 and c["MAX"] == 8 for c in found)


def test_group_size_spreads_untried_values_over_the_patience_left() -> None:
    assert group_size(18, 6, 3) == 3
    assert group_size(7, 6, 3) == 2
    assert group_size(5, 6, 3) == 1
    assert group_size(40, 6, 3) == 3  # capped by max_changes
    assert group_size(0, 6, 3) == 1
    assert group_size(4, 0, 4) == 4  # no patience left: all at once, within the cap


# --------------------------------------------------------------------------- the model


def test_the_model_credits_the_value_that_moved_the_objective() -> None:
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.2),
        _obs(_with(A="on"), 103.0),
        _obs(_with(A="on"), 103.1),
        _obs(_with(B="on"), 100.1),
    ]
    model, draws = _draws(obs)
    a = draws[:, _column(model, "A", "on")]
    b = draws[:, _column(model, "B", "on")]
    d = draws[:, _column(model, "D", "on")]  # never launched: the prior
    assert np.mean(a != 0) > 0.95
    assert np.median(a[a != 0]) == pytest.approx(math.log(103.05 / 100.1), abs=0.005)
    assert np.mean(b != 0) < 0.2  # tried, moved nothing
    assert 0.1 < np.mean(d != 0) < 0.3  # PRIOR_INCLUSION
    assert abs(np.mean(d)) < 0.01


def test_a_group_that_moved_nothing_clears_every_value_in_it() -> None:
    # Sparsity: two untried values launched together with no effect are both idle; a
    # Gaussian prior would only learn that their effects cancel.
    obs = [_obs(BASE, 100.0), _obs(BASE, 100.1), _obs(_with(B="on", D="on"), 100.05)]
    model, draws = _draws(obs)
    for name in ("B", "D"):
        column = draws[:, _column(model, name, "on")]
        assert np.mean(np.abs(column) > 0.005) < 0.1


def test_a_group_that_helped_shares_the_credit_until_a_launch_splits_it() -> None:
    grouped = [_obs(BASE, 100.0), _obs(BASE, 100.1), _obs(_with(A="on", B="on"), 103.0)]
    model, draws = _draws(grouped)
    share_a = np.mean(draws[:, _column(model, "A", "on")] > 0.01)
    share_b = np.mean(draws[:, _column(model, "B", "on")] > 0.01)
    assert 0.25 < share_a < 0.85 and 0.25 < share_b < 0.85
    split = [*grouped, _obs(_with(B="on"), 100.0)]
    model, draws = _draws(split)
    assert np.mean(draws[:, _column(model, "A", "on")] > 0.01) > 0.9
    assert np.mean(draws[:, _column(model, "B", "on")] > 0.01) < 0.1


def test_for_a_latency_objective_lower_is_better() -> None:
    spec = _spec(metric="ttft_ms_p50")
    obs = [_obs(BASE, 200.0), _obs(BASE, 201.0), _obs(_with(A="on"), 190.0)]
    model, draws = _draws(obs, spec)
    assert np.median(draws[:, _column(model, "A", "on")]) > 0.03  # log(200.5 / 190)


def test_a_zero_or_broken_value_is_not_a_point() -> None:
    model = EffectModel(SPEC)
    model.observe([_obs(BASE, 100.0), Observation(params=_with(A="on"), value=0.0, var=1.0)])
    assert model.times_tried()[_column(model, "A", "on")] == 0


# --------------------------------------------------------------------------- proposals


def _propose(obs, incumbent, *, exclude=(), trials_left=6, max_changes=3, seed=0):  # type: ignore[no-untyped-def]
    return propose(
        SPEC,
        obs,
        incumbent,
        exclude=set(exclude),
        rng=np.random.default_rng(seed),
        min_gain=0.01,
        max_changes=max_changes,
        trials_left=trials_left,
    )


def _changed(params: dict[str, object], center: dict[str, object] = BASE) -> set[str]:
    return {k for k in params if params[k] != center[k]}


@pytest.mark.parametrize("seed", range(5))
def test_first_proposals_try_as_many_untried_values_as_the_patience_needs(seed: int) -> None:
    # 9 non-default values, 3 trials left: groups of 3.
    obs = [_obs(BASE, 100.0), _obs(BASE, 100.1)]
    proposal = _propose(obs, BASE, trials_left=3, seed=seed)
    assert proposal is not None
    assert len(_changed(proposal)) == 3
    proposal = _propose(obs, BASE, trials_left=6, seed=seed)
    assert len(_changed(proposal)) == 2


def test_a_value_seen_to_help_elsewhere_is_carried_onto_the_incumbent() -> None:
    # Incumbent {B}; A helped on its own. Every value but C=y has been tried.
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on"), 103.0),
        _obs(_with(B="on"), 103.0),
        _obs(_with(B="on"), 103.1),
        _obs(_with(C="x", D="on", MIN=4, MAX=8), 100.0),
        _obs(_with(MIN=16, MAX=32), 100.1),
    ]
    proposal = _propose(obs, _with(B="on"), exclude={_hash(_with(A="on", B="on", C="y"))})
    assert proposal is not None and proposal["A"] == "on" and proposal["B"] == "on"


def test_a_value_that_makes_the_incumbent_fast_is_not_dropped_to_try_others() -> None:
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on"), 103.0),
        _obs(_with(A="on"), 103.1),
    ]
    for seed in range(5):
        proposal = _propose(obs, _with(A="on"), seed=seed)
        assert proposal is not None and proposal["A"] == "on"


def test_a_value_seen_to_hurt_is_left_alone() -> None:
    tried = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(D="on"), 80.0),  # -20%
        _obs(_with(A="on", B="on"), 100.0),
        _obs(_with(C="x", MIN=4, MAX=8), 100.1),
        _obs(_with(C="y", MIN=16, MAX=32), 100.0),
    ]
    for seed in range(5):
        proposal = _propose(tried, BASE, seed=seed)
        assert proposal is not None and proposal["D"] == DEFAULT


def _hash(params: dict[str, object]) -> str:
    return settings_from_params(SPEC, params).config_hash  # type: ignore[arg-type]


def test_nothing_to_propose_when_every_neighbour_was_launched() -> None:
    obs = [_obs(BASE, 100.0), _obs(BASE, 100.1)]
    every = {_hash(c) for c in neighbours(SPEC, BASE, 4)}
    assert _propose(obs, BASE, exclude=every, max_changes=3) is None
    left = neighbours(SPEC, BASE, 1)[0]
    assert _propose(obs, BASE, exclude=every - {_hash(left)}) == left


def test_proposals_are_reproducible_with_a_seed() -> None:
    obs = [_obs(BASE, 100.0), _obs(BASE, 100.1), _obs(_with(A="on", B="on"), 102.0)]
    first = [_propose(obs, BASE, seed=s) for s in range(4)]
    assert first == [_propose(obs, BASE, seed=s) for s in range(4)]


# --------------------------------------------------------------------------- simplify


def test_simplify_drops_the_passengers_and_keeps_what_helped() -> None:
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on", B="on"), 103.0),  # B a passenger of A's gain ...
        _obs(_with(A="on", B="on"), 103.1),
        _obs(_with(B="on", D="on"), 100.0),  # ... as this launch shows
    ]
    simpler = simplify(SPEC, obs, _with(A="on", B="on"), rng=np.random.default_rng(0))
    assert simpler == _with(A="on")


def test_simplify_never_drops_a_setting_it_is_told_to_keep() -> None:
    # The passenger case above, where B is backed by other means (the probe measured it
    # faster alone): B stays, and a passenger that is not kept is still dropped.
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on", B="on", D="on"), 103.0),
        _obs(_with(A="on", B="on", D="on"), 103.1),
        _obs(_with(B="on", D="on"), 100.0),
    ]
    config = _with(A="on", B="on", D="on")
    rng = np.random.default_rng
    assert simplify(SPEC, obs, config, rng=rng(0)) == _with(A="on")
    assert simplify(SPEC, obs, config, rng=rng(0), keep=frozenset({"B"})) == _with(A="on", B="on")
    assert simplify(SPEC, obs, config, rng=rng(0), keep=frozenset({"B", "D"})) is None


def test_simplify_has_nothing_to_drop_when_every_setting_works() -> None:
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(A="on"), 103.0),
        _obs(_with(B="on"), 103.0),
        _obs(_with(A="on", B="on"), 106.1),
        _obs(_with(A="on", B="on"), 106.0),
    ]
    assert simplify(SPEC, obs, _with(A="on", B="on"), rng=np.random.default_rng(0)) is None


def test_setting_worth_is_the_chance_a_setting_pays_half_the_min_gain() -> None:
    obs = [_obs(BASE, 100.0), _obs(BASE, 100.1), _obs(_with(A="on"), 103.0)]
    model, draws = _draws(obs)
    worth = setting_worth(model, draws, _with(A="on", D="on"), 0.01)
    assert set(worth) == {"A", "D"}
    assert worth["A"] > 0.9
    assert worth["D"] < 0.2  # untried: the prior's chance of a helpful effect


def test_a_wide_neighbourhood_is_sampled_not_enumerated() -> None:
    wide = parse_space(
        {
            "server": {"command": ["srv", "--port", "{port}"]},
            "params": {
                f"P{i}": {"env": f"P{i}", "choices": ["default", 1, 2, 3, 4]} for i in range(16)
            },
        },
        Path("s.yaml"),
    ).spec
    center = {name: DEFAULT for name in wide.params}
    found = neighbours(wide, center, 4, rng=np.random.default_rng(0), limit=500)
    assert len(found) == 500
    singles = [c for c in found if sum(v != DEFAULT for v in c.values()) == 1]
    assert len(singles) == 16 * 4  # every single change is there
    assert len({tuple(sorted(c.items(), key=str)) for c in found}) == 500
    proposal = propose(
        wide,
        [_obs(center, 100.0), _obs(center, 100.2)],
        center,
        exclude=set(),
        rng=np.random.default_rng(0),
        trials_left=6,
    )
    assert proposal is not None and sum(v != DEFAULT for v in proposal.values()) == 3


def test_an_untried_value_of_a_working_setting_gets_a_launch_of_its_own() -> None:
    # C=x made the incumbent 3% faster; C=y was never tried; everything else was, idle.
    obs = [
        _obs(BASE, 100.0),
        _obs(BASE, 100.1),
        _obs(_with(C="x"), 103.0),
        _obs(_with(C="x"), 103.1),
        _obs(_with(C="x", A="on", B="on"), 103.0),
        _obs(_with(C="x", D="on", MIN=4, MAX=8), 103.1),
        _obs(_with(C="x", MIN=16, MAX=32), 102.9),
    ]
    for seed in range(5):
        proposal = _propose(obs, _with(C="x"), seed=seed, trials_left=3)
        assert proposal == _with(C="y")


def test_the_last_neighbours_are_proposed_even_when_each_holds_several_unscreened_values() -> None:
    # A small space near its end (the README's demo once the probe froze the NCCL params):
    # each value launched once, alone, so every neighbour left holds two values not yet
    # screened, more than the group size the patience asks for. One is still proposed,
    # rather than nothing (which handed the search to TPE's repeats of measured ones).
    spec = parse_space(
        {
            "server": {"command": ["srv", "--port", "{port}"]},
            "params": {
                "P": {"env": "P", "choices": ["default", "x"]},
                "Q": {"env": "Q", "choices": ["default", "y"]},
            },
        },
        Path("s.yaml"),
    ).spec
    base = {"P": DEFAULT, "Q": DEFAULT}
    obs = [
        _obs(base, 100.0),
        _obs(base, 100.1),
        _obs({**base, "P": "x"}, 100.2),
        _obs({**base, "Q": "y"}, 99.9),
    ]
    tried = {settings_from_params(spec, p).config_hash for p in (o.params for o in obs)}
    for seed in range(3):
        proposal = propose(
            spec, obs, base, exclude=tried, rng=np.random.default_rng(seed), trials_left=6
        )
        assert proposal == {"P": "x", "Q": "y"}
