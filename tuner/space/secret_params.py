"""Params whose values are secrets: tuner reasons with tags, only the launch sees the values.

A param such as ``env: HF_TOKEN`` or ``args: [--api-key, "{value}"]`` (see
tuner/secrets.py ``secret_param``) takes its values from ``choices``; reading the space
file (tuner/space/spec.py ``parse_space``) gives the space a spec where each of those
choices is a tag (``***``, or ``***1``, ``***2``), and a flag param's literal secret args
(``args: [--hf-token, hf_abc]``) read ``***``, and keeps the file as written in
``Space.secret_spec``. optuna, the study database, the trial lines and ``tuner best`` all
see the tagged spec, so no copy of a secret is made; ``launch_settings`` puts the real
values back for the server's env and argv. Pure: no I/O.
"""

from __future__ import annotations

from tuner.space.settings import Settings, settings_from_params
from tuner.space.spec import Space


def launch_settings(space: Space, settings: Settings) -> Settings:
    """``settings`` with the real values of secret params in their env and args.

    ``settings`` come from ``space.spec`` (tags); the same params at the same choice
    positions of the space file as written give what the server must get.
    """
    written = space.secret_spec
    if written is None:
        return settings
    params = dict(settings.params)
    for name, param in space.spec.params.items():
        value = params.get(name)
        real = written.params[name].choices
        if param.choices is None or real is None or real == param.choices:
            continue  # not a secret param: its value is the real one
        if value in param.choices:
            params[name] = real[param.choices.index(value)]
    return settings_from_params(written, params)
