"""The futility stop: the model ends the search early where nothing is left, never where
an untried or promising setting remains."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
import yaml

from tests.fakes import FakeRunner
from tests.unit.test_sweep_decisions import SPACE
from tuner import exit_codes
from tuner.space.settings import settings_from_params
from tuner.space.spec import Scalar, SpaceSpec, load_space, parse_space
from tuner.storage import Store
from tuner.study import attrs
from tuner.study.effects.model import Observation, levels
from tuner.study.policy import futility
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep
from tuner.views.best import best_report

SMALL = {
    "study": "f",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "A": {"env": "A", "choices": ["default", "a1", "a2"]},
        "B": {"env": "B", "choices": ["default", "b1", "b2"]},
    },
    "stop": {"patience": 8, "min_gain": 0.01},
}


def _spec(data: dict[str, Any] = SMALL) -> SpaceSpec:
    return parse_space(data, Path("f.yaml")).spec


def _obs(params: dict[str, Scalar], value: float, rel_sd: float = 0.002) -> Observation:
    return Observation(params=params, value=value, var=(value * rel_sd) ** 2)


def _chance(
    spec: SpaceSpec, observations: list[Observation], exclude: set[str] | None = None
) -> float:
    untried, _ = futility.chances_of_gain(
        spec,
        observations,
        {},
        exclude=exclude or set(),
        rng=np.random.default_rng(0),
        min_gain=0.01,
        max_changes=2,
    )
    return untried


def _every_value_flat(spec: SpaceSpec, times: int = 2) -> list[Observation]:
    out = [_obs({}, 100.0), _obs({}, 100.1)]
    for name, param in spec.params.items():
        for value in levels(param)[1:]:
            out += [_obs({name: value}, 100.0 + 0.05 * k) for k in range(times)]
    return out


def test_a_flat_model_with_every_value_cleared_rules_the_rest_out() -> None:
    spec = _spec()
    assert _chance(spec, _every_value_flat(spec)) < 0.05


def test_an_untried_value_keeps_the_search_going_on_the_prior_alone() -> None:
    spec = _spec()
    seen = [o for o in _every_value_flat(spec) if o.params.get("B") != "b2"]
    # One value in five has an effect, sd 5%: about an 8% chance of beating 1% untried.
    assert _chance(spec, seen) > 0.05
    # Nothing measured but the defaults: far from futile.
    assert _chance(spec, [_obs({}, 100.0), _obs({}, 100.1)]) > 0.05


def test_a_setting_that_looked_good_once_keeps_the_search_going() -> None:
    spec = _spec()
    observations = [_obs({}, 100.0), _obs({}, 100.1), _obs({"A": "a2"}, 100.0)]
    observations += [_obs({"B": "b2"}, 100.0)]
    # a1 and b1 were launched together once and came out 3% faster; the search then
    # tries them apart: neither is ruled out.
    observations.append(_obs({"A": "a1", "B": "b1"}, 103.0, rel_sd=0.01))
    tried = {settings_from_params(spec, o.params).config_hash for o in observations}
    assert _chance(spec, observations, exclude=tried) > 0.3


def test_no_untried_neighbour_left_is_futile() -> None:
    spec = _spec()
    every = [{"A": a, "B": b} for a in levels(spec.params["A"]) for b in levels(spec.params["B"])]
    tried = {settings_from_params(spec, p).config_hash for p in every}
    assert _chance(spec, [_obs({}, 100.0)], exclude=tried) == 0.0


def _sweep(
    tmp_path: Path, speed: Any, *, stop: dict[str, Any], noise: float, seed: int = 0
) -> tuple[Any, FakeRunner, str]:
    space = {**SPACE, "stop": {**SPACE["stop"], "patience": 8, **stop}}
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(space))
    storage = f"sqlite:///{tmp_path}/d.db"
    runner = FakeRunner(Store(storage), "d", speed=speed, seed=seed, between=noise, within=noise)
    # 36: the plateau's launches beside the final comparison's sized look, kept from the
    # plan on (the off case must reach its plateau, not the budget).
    result = run_sweep(load_space(path), RunRequest(storage, 36, seed=seed), Seams(runner=runner))
    return result, runner, storage


def _three_knobs(p: dict[str, Any]) -> float:
    hits = (p["NCCL_PROTO"] == "LL128") + (str(p["MAX"]) == "32") + (str(p["compilation"]) == "3")
    return 100.0 * 1.03**hits


@pytest.mark.parametrize("seed", [0, 1])
def test_once_the_gains_are_found_the_model_stops_the_search_early(
    tmp_path: Path, seed: int
) -> None:
    result, runner, storage = _sweep(tmp_path / "on", _three_knobs, stop={}, noise=0.002, seed=seed)
    assert result.stop_reason == "futile"
    assert exit_codes.for_stop_reason(result.stop_reason) == exit_codes.OK
    assert "chance of beating it by 1% (futility stop below 5%" in result.stop_detail
    assert "patience 8 not used up" in result.stop_detail
    study = optuna.load_study(study_name="d", storage=storage)
    last_gain = study.user_attrs[attrs.LAST_GAIN_TRIAL]
    after = [
        t for t in study.trials if t.number > last_gain and t.user_attrs.get(attrs.ROLE) == "search"
    ]
    assert futility.MIN_TRIALS <= len(after) < 8
    answer = best_report(storage, "d")
    assert answer.recommended is not None
    want = {"NCCL_PROTO": "LL128", "MAX": "32", "compilation": "3"}
    assert {k: str(v) for k, v in answer.recommended.changed.items()} == want
    # The same study with the plateau rule alone: the same answer, more launches.
    off, _, off_storage = _sweep(
        tmp_path / "off", _three_knobs, stop={"futility": 0}, noise=0.002, seed=seed
    )
    assert off.stop_reason == "plateau"
    assert off.launched > result.launched
    off_answer = best_report(off_storage, "d").recommended
    assert off_answer is not None and off_answer.changed == answer.recommended.changed


def test_a_flat_study_stops_as_futile_only_once_every_value_is_launched(tmp_path: Path) -> None:
    # The search tries every value (9 here) in groups before it screens any twice, so
    # the model has seen each of them launched once, at no gain, when it stops the
    # search; not before futility.MIN_TRIALS search trials. (Before the search screened
    # values twice it spread them over the whole patience, and the plateau came first.)
    result, runner, _ = _sweep(tmp_path, lambda p: 100.0, stop={}, noise=0.001)
    assert result.stop_reason == "futile"
    searched = [changed for role, changed in runner.launched if role == "search"]
    assert futility.MIN_TRIALS <= len(searched) < 8
    seen = {(name, str(value)) for changed in searched for name, value in changed.items()}
    every = {
        (name, str(value))
        for name, param in SPACE["params"].items()
        for value in param["choices"]
        if value != "default"
    }
    assert seen == every


def test_a_study_with_a_gain_left_does_not_stop_as_futile_before_finding_it(tmp_path: Path) -> None:
    def speed(p: dict[str, Any]) -> float:
        return 104.0 if str(p["compilation"]) == "3" else 100.0

    result, _, storage = _sweep(tmp_path, speed, stop={}, noise=0.001)
    answer = best_report(storage, "d")
    assert answer.recommended is not None
    assert {k: str(v) for k, v in answer.recommended.changed.items()} == {"compilation": "3"}
    study = optuna.load_study(study_name="d", storage=storage)
    assert study.user_attrs[attrs.STOP_REASON] == result.stop_reason
