"""The optuna side of the space: ``suggest(trial, spec) -> Settings``.

optuna proposes one value per param; tuner/space/settings.py turns them into env and
argv. Kept apart so that tuner/space/ does not import optuna. Tested with
``optuna.trial.FixedTrial``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import optuna

from tuner.space.settings import Settings, is_default, offers_default, settings_from_params
from tuner.space.spec import DEFAULT, ParamSpec, Scalar, SpaceSpec
from tuner.study import attrs


def suggest(trial: optuna.trial.BaseTrial, spec: SpaceSpec) -> Settings:
    """Ask optuna for one value per param and turn them into Settings.

    A trial enqueued with ``tuner_params`` (the baseline, a confirmation) keeps range
    params at ``default`` where it says so: optuna itself cannot represent "unset"
    for an int or float range.
    """
    fixed: Mapping[str, object] = trial.user_attrs.get(attrs.PARAMS) or {}
    params: dict[str, Scalar] = {}
    for name, param in spec.params.items():
        if name in fixed and is_default(fixed[name]) and not offers_default(param):
            params[name] = DEFAULT
        else:
            params[name] = _suggest_one(trial, name, param)
    return settings_from_params(spec, params)


def _suggest_one(trial: optuna.trial.BaseTrial, name: str, param: ParamSpec) -> Scalar:
    if param.choices is not None:
        # The choices are the space file's scalars; optuna hands one of them back.
        return cast(Scalar, trial.suggest_categorical(name, list(param.choices)))
    if param.int_range is not None:
        low, high = param.int_range
        step = int(param.step) if param.step and not param.log else 1
        return trial.suggest_int(name, low, high, step=step, log=param.log)
    assert param.float_range is not None
    low_f, high_f = param.float_range
    return trial.suggest_float(
        name, low_f, high_f, step=None if param.log else param.step, log=param.log
    )


def optuna_params(spec: SpaceSpec, params: Mapping[str, Scalar]) -> dict[str, Scalar]:
    """The subset optuna can enqueue: ``default`` only where the distribution offers it."""
    return {
        name: value
        for name, value in params.items()
        if name in spec.params and (not is_default(value) or offers_default(spec.params[name]))
    }
