"""The model the server command names: its shape must fit the settings.

With the model's config.json at hand, the baseline and each param value are checked
against the model's shape (see ``tuner.space.model_limits``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.check.report import Findings
from tuner.check.values import param_values
from tuner.space import model_limits
from tuner.space.settings import settings_from_params
from tuner.space.spec import Space


def check_model(space: Space, argv: Sequence[str], found: Findings) -> None:
    """Check the model of the baseline's argv (placeholders filled as a launch fills them)."""
    model = model_limits.model_argument(argv)
    if model is None:
        return
    config = model_limits.load_model_config(space)
    if config is None:
        found.add(
            "ok",
            "model",
            f"no config.json for {model} on this machine: "
            "shape checks (TP vs heads, FP8 blocks) skipped",
        )
        return
    found.add("ok", "model", f"config read from {config.get('_tuner_config_path', model)}")
    reason = model_limits.refusal(config, argv)
    if reason:
        found.add("error", "server.command", f"the baseline cannot start: {reason}")
        return
    for name, param in space.spec.params.items():
        if param.args is None:
            continue
        for value in param_values(param):
            args = list(settings_from_params(space.spec, {name: value}).args)
            why = model_limits.refusal(config, list(argv) + args)
            if why:
                found.add(
                    "warning",
                    f"params.{name}",
                    f"{value!r} can never start: "
                    f"{why.rstrip('.')}; such trials are recorded as not launched",
                )
