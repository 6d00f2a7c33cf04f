"""Params whose values are secrets: tuner reasons with tags, only the launch sees the values.

A param such as ``env: HF_TOKEN`` or ``args: [--api-key, "{value}"]`` (see
tuner/secrets.py ``secret_param``) takes its values from ``choices``; ``hide_secret_params``
gives the space a spec where each of those choices is a tag (``***``, or ``***1``,
``***2``), and a flag param's literal secret args (``args: [--hf-token, hf_abc]``) read
``***``. optuna, the study database, the trial lines and ``tuner best`` all see that spec,
so no copy of a secret is made; ``launch_settings`` puts the real values back for the
server's env and argv. Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuner.secrets import redact_argv, secret_param, tag_choices

if TYPE_CHECKING:  # spec.py calls this module from parse_space
    from tuner.space.settings import Settings
    from tuner.space.spec import ParamSpec, Space, SpaceSpec


def hide_secret_params(spec: SpaceSpec) -> SpaceSpec | None:
    """The spec with every secret param value tagged; None when it has no secret param.

    Raises ValueError (with the key) for a secret param given as a range: a secret is
    a value to pass, not a number to search.
    """
    hidden: dict[str, ParamSpec] = {}
    for name, param in spec.params.items():
        update: dict[str, object] = {}
        if secret_param(param.model_dump(exclude_none=True)):
            if param.choices is None:
                target = param.env or " ".join(param.args or ())
                raise ValueError(
                    f"params.{name}: {target} looks like a secret: list its value under "
                    "'choices' (tuner stores it as ***), or set it in server.env"
                )
            tagged = tag_choices(param.choices)
            if tagged != param.choices:
                update["choices"] = tagged
        if param.args is not None:
            args = redact_argv(param.args)
            if args != param.args:
                update["args"] = args
        if update:
            hidden[name] = param.model_copy(update=update)
    if not hidden:
        return None
    return spec.model_copy(update={"params": {**spec.params, **hidden}})


def launch_settings(space: Space, settings: Settings) -> Settings:
    """``settings`` with the real values of secret params in their env and args.

    ``settings`` come from ``space.spec`` (tags); the same params at the same choice
    positions of the space file as written give what the server must get.
    """
    written = space.secret_spec
    if written is None:
        return settings
    from tuner.space.settings import settings_from_params

    params = dict(settings.params)
    for name, param in space.spec.params.items():
        value = params.get(name)
        real = written.params[name].choices
        if param.choices is None or real is None or real == param.choices:
            continue  # not a secret param: its value is the real one
        if value in param.choices:
            params[name] = real[param.choices.index(value)]
    return settings_from_params(written, params)
