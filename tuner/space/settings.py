"""A configuration's settings: ``settings_from_params(spec, params) -> Settings``.

``Settings`` is the only place where parameter values become environment
variables and command-line arguments. ``default`` means: leave the variable
unset (and remove it from the inherited environment) or leave the argument out.
Constraints between params and the command's placeholders live here too. Pure: no
I/O and no optuna (the optuna side, ``suggest``, is tuner/study/suggest.py).
"""

from __future__ import annotations

import hashlib
import json
import operator
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuner.space.spec import Constraint, ParamSpec, Scalar, ServerSpec, SpaceSpec
from tuner.vocabulary import DEFAULT


@dataclass(frozen=True)
class Settings:
    """What one trial applies: every param's value, and the env and args they become."""

    params: dict[str, Scalar]
    env: dict[str, str] = field(default_factory=dict)
    unset: frozenset[str] = frozenset()
    args: tuple[str, ...] = ()

    @property
    def changed(self) -> dict[str, Scalar]:
        """The params not at ``default``: what a user would have to change."""
        return changed_from_defaults(self.params)

    @property
    def config_hash(self) -> str:
        """A stable id of the configuration: equal settings, equal hash, in any order."""
        canonical = json.dumps(
            {k: canonical_value(v) for k, v in sorted(self.changed.items())}, sort_keys=True
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def is_default(value: Any) -> bool:
    """Whether a param's value is the word ``default`` (unset / left out)."""
    return isinstance(value, str) and value == DEFAULT


def changed_from_defaults(params: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The params not at ``default``, in their order: what a user would have to change."""
    return {k: v for k, v in params.items() if not is_default(v)}


def offers_default(param: ParamSpec) -> bool:
    """Whether optuna's distribution of this param holds the word ``default``.

    Only a choices list can; a range param at ``default`` is not an optuna value.
    """
    return param.choices is not None and DEFAULT in param.choices


def baseline_params(spec: SpaceSpec) -> dict[str, Scalar]:
    """Every param at ``default``: the configuration the baseline launches."""
    return {name: DEFAULT for name in spec.params}


def settings_from_params(spec: SpaceSpec, params: Mapping[str, Scalar]) -> Settings:
    """Turn param values into env and args, in the order the space file lists them."""
    env: dict[str, str] = {}
    unset: set[str] = set()
    args: list[str] = []
    for name, param in spec.params.items():
        value = params.get(name, DEFAULT)
        if param.env is not None:
            if is_default(value):
                unset.add(param.env)
            else:
                env[param.env] = _env_text(value)
        elif param.args is not None:
            if is_default(value):
                continue
            if param.is_flag:
                if value is True or str(value).lower() in ("true", "1", "yes", "on"):
                    args.extend(param.args)
                continue
            args.extend(a.replace("{value}", _env_text(value)) for a in param.args)
    full = {name: params.get(name, DEFAULT) for name in spec.params}
    return Settings(params=full, env=env, unset=frozenset(unset), args=tuple(args))


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}


def violated_constraints(spec: SpaceSpec, params: Mapping[str, Scalar]) -> list[Constraint]:
    """The constraints these params break.

    A side at ``default`` is unknown (the server picks the value), so a constraint
    that names it is not checked: NCCL_MIN_NCHANNELS <= NCCL_MAX_NCHANNELS holds
    whenever either is left to NCCL. A param ``params`` leaves out is at its default.
    """
    broken = []
    for constraint in spec.constraints:
        left = _side_value(constraint.left, params, spec)
        right = _side_value(constraint.right, params, spec)
        if left is None or right is None:
            continue
        try:
            ok = _OPS[constraint.op](left, right)
        except TypeError:
            ok = _OPS[constraint.op](str(left), str(right))
        if not ok:
            broken.append(constraint)
    return broken


def _side_value(side: str, params: Mapping[str, Scalar], spec: SpaceSpec) -> Any:
    if side in params or side in spec.params:
        value = params.get(side, DEFAULT)
        if is_default(value):
            return None
        return _number_or_text(value)
    return _number_or_text(side)  # a literal: NCCL_MAX_NCHANNELS <= 16


def server_argv(server: ServerSpec, settings: Settings, *, port: int, **names: str) -> list[str]:
    """The command to run: the space's argv with placeholders filled, then the trial's args.

    Only ``{port}``, ``{python}`` (this interpreter), ``{config}`` (the configuration
    hash) and the documented ``names`` (``{trial_dir}``, ``{study_dir}``) are
    substituted; nothing goes through a shell.
    """
    values = _placeholders(settings, port, names)
    return [_fill(arg, values) for arg in server.command] + list(settings.args)


def server_env(
    server: ServerSpec, settings: Settings, *, port: int, **names: str
) -> dict[str, str]:
    """The variables to set: the space's fixed env (placeholders filled), then the trial's."""
    values = _placeholders(settings, port, names)
    return {**{k: _fill(v, values) for k, v in server.env.items()}, **settings.env}


def _placeholders(settings: Settings, port: int, names: Mapping[str, str]) -> dict[str, str]:
    return {"port": str(port), "python": sys.executable, "config": settings.config_hash, **names}


def _fill(arg: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


def _env_text(value: Scalar) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _number_or_text(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def canonical_value(value: Any) -> str:
    """A value as the server sees it: 8, "8" and 8.0 are one setting once they are text."""
    return (
        _env_text(value)
        if not isinstance(value, float) or not value.is_integer()
        else str(int(value))
    )
