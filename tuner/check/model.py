"""The model the server command names: a local path must exist, and its shape must fit.

A model argument that looks like a path (absolute, starting with ``.`` or ``~``, or built
from ``{space_dir}``, which is filled with an absolute path) but does not exist is an
error: vLLM would take it for a Hugging Face repo id and both baseline launches would fail
after their imports. An ``org/name`` that is not on this machine stays allowed (vLLM
downloads it). With the model's config.json at hand, the baseline and each param value
are checked against the model's shape (see ``tuner.space.model_limits``), and, with
``server.gpus``, their layout against the GPUs (``tuner.space.layout``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from tuner.check.report import Findings
from tuner.check.server_kind import ServerKind, missing_model_hint
from tuner.check.values import param_values
from tuner.space import model_limits
from tuner.space.layout import gpu_refusal, layout_of
from tuner.space.settings import settings_from_params
from tuner.space.spec import Space


def check_model(
    space: Space, argv: Sequence[str], found: Findings, kind: ServerKind = "other"
) -> None:
    """Check the model of the baseline's argv (placeholders filled as a launch fills them);
    ``kind`` (tuner.check.server_kind) picks the fix a missing local model gets."""
    check_gpus(space, argv, found)
    model = model_limits.model_argument(argv)
    if model is None:
        return
    if looks_like_path(model) and not Path(model).expanduser().exists():
        found.add("error", "server.command", _missing_path_message(space, argv, model, kind))
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
    warn_each_value(space, argv, found, lambda full: model_limits.refusal(config, full))


def check_gpus(space: Space, argv: Sequence[str], found: Findings) -> None:
    """The baseline's layout, and each param value's, against ``server.gpus``."""
    gpus = space.spec.server.gpus
    if gpus is None:
        return
    too_many = gpu_refusal(layout_of(argv), gpus)
    if too_many:
        found.add("error", "server.command", f"the baseline cannot start: {too_many}")
        return
    warn_each_value(space, argv, found, lambda full: gpu_refusal(layout_of(full), gpus))


def warn_each_value(
    space: Space,
    argv: Sequence[str],
    found: Findings,
    refusal: Callable[[list[str]], str | None],
    then: str = "such trials are recorded as not launched",
) -> None:
    """A warning for each param value whose argv, the others at default, ``refusal`` refuses;
    ``then`` says what the sweep does with such a value."""
    for name, param in space.spec.params.items():
        if param.args is None:
            continue
        for value in param_values(param):
            args = list(settings_from_params(space.spec, {name: value}).args)
            why = refusal(list(argv) + args)
            if why:
                found.add(
                    "warning",
                    f"params.{name}",
                    f"{value!r} can never start with the other params at default: "
                    f"{why.rstrip('.')}; {then}",
                )


def looks_like_path(model: str) -> bool:
    """Whether a model argument names a local path rather than a Hugging Face repo id."""
    return os.path.isabs(model) or model.startswith((".", "~"))


def _missing_path_message(space: Space, argv: Sequence[str], model: str, kind: ServerKind) -> str:
    where = os.path.abspath(os.path.expanduser(model))
    written = model_limits.model_argument(space.spec.server.command) or model
    origin = ""
    if "{space_dir}" in written:
        # The usual cause: the space file was copied away from the folder the model is in.
        origin = f" ({written!r}, {{space_dir}} being {space.path.resolve().parent})"
    by_flag = any(arg == "--model" or arg.startswith("--model=") for arg in argv)
    flag = "--model" if by_flag else "the model argument"
    return (
        f"{space.path}: the model is a local path that does not exist{origin}: "
        f"no such directory: {where}; {missing_model_hint(kind, flag)}"
    )
