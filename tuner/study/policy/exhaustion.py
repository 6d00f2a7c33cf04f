"""When the space is used up: the grid of the params left open, and how long repeats may run.

The local search (tuner/study/policy/local_search.py) proposes nothing once every
neighbour of the incumbent has been launched; optuna's TPE then proposes, and in a small
space most of its proposals repeat a configuration already measured (not launched again,
but each is a trial in the list). ``open_grid`` lists the configurations of the params
left open (the probe's frozen ones at default) when they are few, so the study can stop
as soon as all were tried; ``IDLE_AFTER_LOCAL`` bounds the repeats where they are too many
to list. The rules themselves are tuner/study/policy/stops.py ``exhausted`` and
``idle_proposals``.
"""

from __future__ import annotations

import itertools
import math

from tuner.space.settings import baseline_params, settings_from_params, violated_constraints
from tuner.space.spec import SpaceSpec

MAX_IDLE_PROPOSALS = 50
"""Proposals in a row that launch nothing (duplicates, constraint breaks) before giving up."""
GRID_LIMIT = 10_000
"""Configurations of the params left open, at most, to check whether all were tried."""
IDLE_AFTER_LOCAL = 8
"""Proposals in a row that launch nothing (repeats, constraint breaks), once the local
search has nothing left, before the space counts as exhausted. TPE's repeats are then
all that is proposed; while the local search still proposes, the sweep's own, larger
limit holds."""


def open_grid(spec: SpaceSpec, frozen: frozenset[str] = frozenset()) -> set[str] | None:
    """The hashes of every configuration of the params not ``frozen`` (those at default),
    constraints kept; None when a param is a range or there are over GRID_LIMIT of them."""
    open_params = [n for n in spec.params if n not in frozen]
    choices = [spec.params[n].choices for n in open_params]
    if any(c is None for c in choices) or math.prod(len(c or ()) for c in choices) > GRID_LIMIT:
        return None
    base = baseline_params(spec)
    grid = set()
    for combo in itertools.product(*(c or () for c in choices)):
        params = {**base, **dict(zip(open_params, combo, strict=True))}
        if not violated_constraints(spec, params):
            grid.add(settings_from_params(spec, params).config_hash)
    return grid


def all_tried(spec: SpaceSpec, frozen: frozenset[str], tried: set[str]) -> int | None:
    """The size of the open grid when every configuration in it was tried, else None."""
    grid = open_grid(spec, frozen)
    return len(grid) if grid is not None and grid <= tried else None
