"""The local search's hook for the probe: frozen params keep the incumbent's value."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tuner.space.settings import settings_from_params
from tuner.space.spec import parse_space
from tuner.study.effects.neighbours import neighbours
from tuner.study.policy.local_search import propose

SPEC = parse_space(
    {
        "server": {"command": ["srv", "{port}"]},
        "params": {
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
            "NCCL_BUFFSIZE": {"env": "NCCL_BUFFSIZE", "choices": ["default", 2097152]},
            "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
        },
    },
    Path("s.yaml"),
).spec
DEFAULTS = {name: "default" for name in SPEC.params}


def test_neighbours_never_move_a_frozen_param() -> None:
    frozen = frozenset({"NCCL_PROTO", "NCCL_BUFFSIZE"})
    steps = neighbours(SPEC, DEFAULTS, 3, frozen=frozen)
    assert steps and all(s["NCCL_PROTO"] == s["NCCL_BUFFSIZE"] == "default" for s in steps)
    assert {s["compilation"] for s in steps} == {0, 3}
    assert len(neighbours(SPEC, DEFAULTS, 3)) > len(steps)


def test_propose_leaves_frozen_params_alone_until_nothing_is_left() -> None:
    frozen = frozenset({"NCCL_PROTO", "NCCL_BUFFSIZE"})
    tried: set[str] = set()
    proposals = []
    rng = np.random.default_rng(0)
    while (p := propose(SPEC, [], DEFAULTS, exclude=tried, rng=rng, frozen=frozen)) is not None:
        proposals.append(p)
        tried.add(settings_from_params(SPEC, p).config_hash)
    assert [p["compilation"] for p in proposals] in ([0, 3], [3, 0])
    assert all(p["NCCL_PROTO"] == "default" for p in proposals)
