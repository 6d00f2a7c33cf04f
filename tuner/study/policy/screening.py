"""Which fidelity a launch runs at: screening (random weights) or full (the real model).

Screening launches search; full launches decide (docs/statistics.md, "Screening
launches"). One rule, asked where a launch is queued (the snapshot counts queued launches
by it) and again where a trial starts (a trial optuna's sampler proposed freely has
no fidelity yet):

- without a ``screening:`` section every launch is full;
- a fidelity the policy fixed when it queued the launch holds (the full baselines);
- the final comparison's launches are full: the answer rests on the real model;
- a configuration that changes a param screening cannot judge (tuner/space/screening.py:
  speculative decoding, the model or its format, ``screen: false``) is full;
- every other launch is a screening launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.space.screening import screenable
from tuner.space.spec import SpaceSpec
from tuner.study import attrs


def fidelity(
    spec: SpaceSpec, role: str | None, params: Mapping[str, Any] | None, fixed: str | None = None
) -> attrs.Fidelity:
    """The fidelity of a launch of ``params`` in ``role`` (see the module)."""
    if spec.screening is None:
        return attrs.FULL
    if fixed in (attrs.FULL, attrs.SCREEN):
        return attrs.FULL if fixed == attrs.FULL else attrs.SCREEN
    if role == attrs.FINAL:
        return attrs.FULL
    if params is not None and not screenable(spec.params, params):
        return attrs.FULL
    return attrs.SCREEN


def full_reserve_refusal(spec: SpaceSpec, role: str, full_launched: int, budget: int) -> str | None:
    """Why a full launch of a screening study (one screening cannot judge) is not made: the
    full launches left are the final comparison's (a proposal of optuna's own sampler,
    which the policy did not queue)."""
    if spec.screening is None or role in (attrs.BASELINE, attrs.FINAL):
        return None
    if budget - full_launched - 2 * spec.stop.final_launches >= 1:
        return None
    return (
        "not launched: a full launch (a setting screening cannot judge), and the full "
        "launches left of --trials are the final comparison's"
    )
