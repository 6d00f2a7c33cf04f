"""tuner/study/policy/steering.py: a setting seen to break a limit is not proposed again."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import yaml

from tests.fakes import FakeRunner
from tests.unit.test_feasibility import BASE, BASE2, BATCHED, SEQS, STUDY, Launches, _level, _study
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.storage import Store
from tuner.study.attrs import LAUNCHED, PROPOSER, ROLE
from tuner.study.attrs import PARAMS as PARAMS_ATTR
from tuner.study.facts.limit_data import limit_data
from tuner.study.policy.steering import STEER_CONFIDENCE, fit_steering, propose_avoiding
from tuner.study.run.request import RunRequest, Seams
from tuner.study.run.sweep import run_sweep

DEFAULTS = {"batched": "default", "seqs": "default"}
BOTH = {"batched": 16384, "seqs": 256}


def _steering(tmp_path: Path, launches: Launches, **objective: Any):  # type: ignore[no-untyped-def]
    _, store = _study(tmp_path, launches, **objective)
    space = load_space(tmp_path / "slo.yaml")
    return space, fit_steering(limit_data(store, space), space.spec, np.random.default_rng(0))


def test_the_setting_that_broke_the_limit_is_ruled_out_with_others_too(tmp_path: Path) -> None:
    space, steering = _steering(tmp_path, STUDY)
    assert steering is not None
    # batched=16384 took TTFT p99 from ~61 ms to ~160 ms against a limit of 100 ms.
    why = steering.likely_breaks({**DEFAULTS, **BATCHED})
    assert why is not None and why.startswith("ttft_ms.p99@64 <= 100")
    assert steering.likely_breaks(BOTH) is not None  # a combination never launched
    assert steering.likely_breaks({**DEFAULTS, **SEQS}) is None
    assert steering.likely_breaks(DEFAULTS) is None
    (model,) = steering.models
    assert model.p_break(BOTH) > STEER_CONFIDENCE
    assert model.p_break({**DEFAULTS, **SEQS}) < 0.1


def test_an_untried_setting_is_not_ruled_out_on_the_prior_alone(tmp_path: Path) -> None:
    space, steering = _steering(tmp_path, [({}, BASE), ({}, BASE2)])
    assert steering is not None
    assert steering.likely_breaks({**DEFAULTS, **BATCHED}) is None
    assert steering.likely_breaks(BOTH) is None


def test_a_setting_that_only_comes_near_the_limit_is_not_ruled_out(tmp_path: Path) -> None:
    near = [(5600.0, 90.0), (5610.0, 92.0), (5590.0, 91.0)]  # 91 ms: within 100 ms
    _, steering = _steering(tmp_path, [({}, BASE), ({}, BASE2), (BATCHED, near)])
    assert steering is not None
    assert steering.likely_breaks({**DEFAULTS, **BATCHED}) is None


def test_without_limits_nothing_is_steered(tmp_path: Path) -> None:
    _, steering = _steering(tmp_path, STUDY, subject_to=[])
    assert steering is None


def test_the_search_is_asked_again_without_a_proposal_that_breaks_a_limit(
    tmp_path: Path,
) -> None:
    space, steering = _steering(tmp_path, STUDY)
    offers = [BOTH, {**DEFAULTS, **SEQS}]
    seen: list[set[str]] = []

    def propose(exclude: set[str]) -> dict[str, Any] | None:
        seen.append(set(exclude))
        return next(
            (o for o in offers if settings_from_params(space.spec, o).config_hash not in exclude),
            None,
        )

    params, skipped = propose_avoiding(propose, steering, space.spec, {"launched"})
    assert params == {**DEFAULTS, **SEQS}
    assert len(skipped) == 1 and "batched=16384 seqs=256" in skipped[0]
    assert "ttft_ms.p99@64 <= 100" in skipped[0]
    assert seen[0] == {"launched"}
    assert settings_from_params(space.spec, BOTH).config_hash in seen[1]
    # Without a model nothing is skipped: the first proposal stands.
    assert propose_avoiding(propose, None, space.spec, set()) == (BOTH, [])


# --- in a sweep: the controller asks before it queues a proposal --------------------------

SWEEP_SPACE: dict[str, Any] = {
    "study": "steer",
    "server": {"command": ["srv", "--port", "{port}"]},
    "params": {
        "batched": {"args": ["--max-num-batched-tokens", "{value}"], "choices": ["default", 16384]},
        "seqs": {"args": ["--max-num-seqs", "{value}"], "choices": ["default", 256]},
        "proto": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
    },
    "benchmark": {"concurrency": [64], "rounds": 3},
    "objective": {
        "metric": "output_throughput",
        "concurrency": 64,
        "subject_to": ["ttft_ms.p99@64 <= 60"],
    },  # fmt: skip
    "stop": {"baseline_launches": 2, "patience": 6, "min_gain": 0.01, "confirmations": 1},
}


def _speed(params: Mapping[str, Any]) -> float:
    """slo-trade's shape: batched buys 14%, seqs 5%, proto nothing."""
    gain = 1.14 if params["batched"] == 16384 else 1.0
    return 5000.0 * gain * (1.05 if params["seqs"] == 256 else 1.0)


class TtftRunner(FakeRunner):
    """FakeRunner that also stores each round's level at 64 streams with a TTFT p99: 30 ms,
    four times that with batched (the limit is 60 ms)."""

    def run(self, **kw):  # type: ignore[no-untyped-def]
        outcome = super().run(**kw)
        ttft = 120.0 if kw["settings"].params["batched"] == 16384 else 30.0
        for i, value in enumerate(outcome.round_values):
            summary = _level(64, value, ttft * (1 + self.rng.gauss(0, 0.05)))
            self.store.add_level(outcome.launch_id, round_index=i, summary=summary, requests=[])
        return outcome


def _steered_sweep(tmp_path: Path, limits: list[str]) -> list[tuple[str, str | None, dict]]:
    space = {**SWEEP_SPACE, "objective": {**SWEEP_SPACE["objective"], "subject_to": limits}}
    tmp_path.mkdir()
    path = tmp_path / "steer.yaml"
    path.write_text(yaml.safe_dump(space))
    storage = f"sqlite:///{tmp_path}/s.db"
    runner = TtftRunner(Store(storage), "steer", speed=_speed, seed=1)
    run_sweep(load_space(path), RunRequest(storage, 14, seed=1), Seams(runner=runner))
    trials = optuna.load_study(study_name="steer", storage=storage).get_trials()
    return [
        (t.user_attrs.get(ROLE), t.user_attrs.get(PROPOSER), t.user_attrs.get(PARAMS_ATTR, {}))
        for t in trials
        if t.user_attrs.get(LAUNCHED)
    ]


def _local_with_batched_after_first(launches: list[tuple[str, str | None, dict]]) -> list[dict]:
    first = next(i for i, (_, _, p) in enumerate(launches) if p.get("batched") == 16384)
    return [
        p
        for role, proposer, p in launches[first + 1 :]
        if role == "search" and proposer == "local" and p.get("batched") == 16384
    ]


def test_in_a_sweep_the_breaking_setting_is_not_proposed_again(tmp_path: Path) -> None:
    launches = _steered_sweep(tmp_path / "limit", ["ttft_ms.p99@64 <= 60"])
    assert any(p.get("batched") == 16384 for _, _, p in launches), "never tried"
    assert _local_with_batched_after_first(launches) == []
    # Nor does optuna's TPE launch it, once the local search has nothing left.
    first = next(i for i, (_, _, p) in enumerate(launches) if p.get("batched") == 16384)
    assert [p for role, _, p in launches[first + 1 :] if role == "search"
            and p.get("batched") == 16384] == []  # fmt: skip
    # Without the limit the search carries the setting on to other combinations.
    free = _steered_sweep(tmp_path / "free", [])
    assert _local_with_batched_after_first(free) != []
