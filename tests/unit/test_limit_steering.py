"""tuner/study/limit_steering.py: a setting seen to break a limit is not proposed again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.unit.test_feasibility import BASE, BASE2, BATCHED, SEQS, STUDY, Launches, _study
from tuner.space.settings import settings_from_params
from tuner.space.spec import load_space
from tuner.study.limit_steering import STEER_CONFIDENCE, fit_steering, propose_avoiding

DEFAULTS = {"batched": "default", "seqs": "default"}
BOTH = {"batched": 16384, "seqs": 256}


def _steering(tmp_path: Path, launches: Launches, **objective: Any):  # type: ignore[no-untyped-def]
    _, store = _study(tmp_path, launches, **objective)
    space = load_space(tmp_path / "slo.yaml")
    return space, fit_steering(store, space, np.random.default_rng(0))


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
