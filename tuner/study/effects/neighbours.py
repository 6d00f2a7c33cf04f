"""The neighbourhood of a configuration: the steps the local search and the futility stop see.

A step changes 1..max_changes params that the centre leaves at default or sets to a
value that does nothing, or it changes one *working* param alone (tuner/study/effects/
model.py). Pure: the space and a centre in, configurations out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import numpy as np

from tuner.space.settings import canonical_value, violated_constraints
from tuner.space.spec import DEFAULT, Scalar, SpaceSpec
from tuner.study.effects.model import levels

MAX_CANDIDATES = 20_000
"""Neighbours scored per proposal at most; a wider neighbourhood is sampled at random."""


def neighbours(
    spec: SpaceSpec,
    center: Mapping[str, Scalar],
    max_changes: int,
    working: frozenset[str] = frozenset(),
    *,
    rng: np.random.Generator | None = None,
    limit: int = MAX_CANDIDATES,
    frozen: frozenset[str] = frozenset(),
) -> list[dict[str, Scalar]]:
    """The configurations one step from ``center`` (constraints kept).

    A step changes 1..max_changes params that ``center`` leaves at default or sets to a
    value that does nothing, or it changes one ``working`` param alone. Replacing a
    setting that may be what makes ``center`` fast while changing others would measure
    only the difference, and a launch that moves nothing would clear none of them.
    ``frozen`` params never change (the probe found they cannot help).
    More than ``limit`` steps (a space of many params): ``limit`` of them drawn with
    ``rng``, single changes always included.
    """
    base = {name: center.get(name, DEFAULT) for name in spec.params}
    moves = {
        name: [v for v in levels(p) if canonical_value(v) != canonical_value(base[name])]
        for name, p in spec.params.items()
        if name not in frozen
    }
    groups: list[tuple[str, ...]] = [(name,) for name in sorted(working & moves.keys())]
    free = sorted(name for name in moves if name not in working)
    for k in range(1, max_changes + 1):
        groups.extend(itertools.combinations(free, k))
    total = sum(math.prod(len(moves[n]) for n in names) for names in groups)
    if total > limit:
        return _sampled_steps(spec, base, moves, groups, rng or np.random.default_rng(), limit)
    out: list[dict[str, Scalar]] = []
    for names in groups:
        for values in itertools.product(*(moves[n] for n in names)):
            candidate = {**base, **dict(zip(names, values, strict=True))}
            if not violated_constraints(spec, candidate):
                out.append(candidate)
    return out


def _sampled_steps(
    spec: SpaceSpec,
    base: dict[str, Scalar],
    moves: dict[str, list[Scalar]],
    groups: list[tuple[str, ...]],
    rng: np.random.Generator,
    limit: int,
) -> list[dict[str, Scalar]]:
    """Every single change, then random multi-change steps (duplicates dropped)."""
    picks: list[tuple[tuple[str, ...], list[Scalar]]] = [
        (g, [v]) for g in groups if len(g) == 1 for v in moves[g[0]]
    ]
    for _ in range(2 * limit):
        names = groups[int(rng.integers(len(groups)))]
        picks.append((names, [moves[n][int(rng.integers(len(moves[n])))] for n in names]))
    seen: set[tuple[tuple[str, str], ...]] = set()
    out: list[dict[str, Scalar]] = []
    for names, values in picks:
        key = tuple(sorted((n, canonical_value(v)) for n, v in zip(names, values, strict=True)))
        if key in seen:
            continue
        seen.add(key)
        candidate = {**base, **dict(zip(names, values, strict=True))}
        if not violated_constraints(spec, candidate):
            out.append(candidate)
        if len(out) >= limit:
            break
    return out
