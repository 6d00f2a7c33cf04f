"""The settings the probe measures: the defaults, each NCCL value alone, small gains together.

tuner/study/run/probe.py probes each of these once (seconds each, against a model load
of minutes): every value of every NCCL param alone against the defaults, so that each
param's effect on the all-reduce is known before any launch; and, when several small
gains could add up to ``stop.min_gain``, those values set at once, because NCCL settings
need not add (tuner/probe/screen.py decides from them). Pure: the space in, settings out.
"""

from __future__ import annotations

from collections.abc import Mapping

from tuner.space.settings import (
    Settings,
    baseline_params,
    settings_from_params,
    violated_constraints,
)
from tuner.space.spec import Scalar, SpaceSpec
from tuner.study.effects.model import levels
from tuner.study.policy.probe_narrowing import is_nccl_param


def nccl_params(spec: SpaceSpec) -> list[str]:
    """The space's params the probe measures: those that set an NCCL variable."""
    return [name for name, param in spec.params.items() if is_nccl_param(param)]


def single_changes(spec: SpaceSpec, names: list[str]) -> list[tuple[str, Scalar, Settings]]:
    """Each value of each param of ``names`` but its first (the default), alone: (param,
    value, the defaults with it set)."""
    base = baseline_params(spec)
    out = []
    for name in names:
        for value in levels(spec.params[name])[1:]:
            out.append((name, value, settings_from_params(spec, {**base, name: value})))
    return out


def together(spec: SpaceSpec, values: Mapping[str, str]) -> Settings | None:
    """The defaults with ``values`` (param -> str(value)) set at once, when that is a
    valid configuration of two or more changes; else None."""
    if len(values) < 2:
        return None
    params = dict(baseline_params(spec))
    for name, text in values.items():
        params[name] = next(v for v in levels(spec.params[name]) if str(v) == text)
    if violated_constraints(spec, params):
        return None
    return settings_from_params(spec, params)
