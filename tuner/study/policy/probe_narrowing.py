"""The search space as the probe's finding leaves it, and the probe's nominee (docs/probe.md).

The probe (tuner/study/run/probe.py) times every NCCL setting's all-reduce before any
model load and saves its finding in the study (``state.ProbeMemory``): the params that
cannot move the objective by ``min_gain`` (frozen, left at default), the values of the
others that can help alone (open), and each open param's significantly fastest value
(the nominee). Pure: the space and the saved finding in, a space or params out.
"""

from __future__ import annotations

from collections.abc import Mapping

from tuner.nccl import is_nccl_variable
from tuner.space.settings import baseline_params, is_default, violated_constraints
from tuner.space.spec import DEFAULT, ParamSpec, Scalar, SpaceSpec
from tuner.study.effects.model import levels
from tuner.study.state import ProbeMemory


def is_nccl_param(param: ParamSpec) -> bool:
    """A param that sets an NCCL variable: what the probe can speak for."""
    return param.env is not None and is_nccl_variable(param.env)


def search_spec(spec: SpaceSpec, probe: ProbeMemory) -> SpaceSpec:
    """The space the local search walks: each NCCL param narrowed to the values the probe
    leaves open, a frozen one to its default. Values off it are never proposed, and the
    model of effects has no column for them."""
    frozen, open_values = probe.frozen, probe.open_values
    if not frozen and not open_values:
        return spec
    params = dict(spec.params)
    for name, param in spec.params.items():
        if not is_nccl_param(param) or (name not in frozen and name not in open_values):
            continue
        keep = open_values.get(name, frozenset())
        values = [v for v in levels(param)[1:] if str(v) in keep]
        params[name] = param.model_copy(
            update={"choices": [DEFAULT, *values], "int_range": None, "float_range": None}
        )
    return spec.model_copy(update={"params": params})


def nominee(spec: SpaceSpec, probe: ProbeMemory) -> dict[str, Scalar] | None:
    """The baseline with every open NCCL param at its significantly fastest value, or
    None: when the finding names none, it breaks a constraint, or it was queued once."""
    if probe.nominated:
        return None
    named = probe.nominee
    if not named:
        return None
    params = dict(baseline_params(spec))
    for name, text in named.items():
        value = next((v for v in levels(spec.params[name]) if str(v) == text), None)
        if value is None:
            return None
        params[name] = value
    if violated_constraints(spec, params):
        return None
    return params


def backed(probe: ProbeMemory, params: Mapping[str, Scalar]) -> frozenset[str]:
    """The params set to the probe's nominee value: each measured alone as faster by
    enough to matter, so never dropped as idle (simplification's ``keep``)."""
    return frozenset(n for n, text in probe.nominee.items() if str(params.get(n)) == text)


def closed_values(probe: ProbeMemory, params: Mapping[str, Scalar]) -> list[str]:
    """``name=value`` for each open param set to a value the probe found cannot help."""
    return [
        f"{name}={params[name]}"
        for name, values in sorted(probe.open_values.items())
        if name in params and not is_default(params[name]) and str(params[name]) not in values
    ]
