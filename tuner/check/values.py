"""The arguments and environment a space can produce, with the space key each comes from.

A check cannot try every value of a range, so it tries the values most likely to be
wrong: every choice but ``default``, and both ends of a range; and what a screening launch
adds (``screening.args``, ``screening.env``). Each comes back with its space key
(``server.command``, ``server.env.NAME``, ``params.NAME``, ``screening.args``,
``screening.env.NAME``) so that a finding points at the line of the space file to fix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tuner.check.command import command_prefix
from tuner.space.settings import settings_from_params
from tuner.space.spec import ParamSpec, Scalar, Space
from tuner.vocabulary import DEFAULT


def param_values(param: ParamSpec) -> list[Scalar]:
    """The values worth checking: every choice but default, and both ends of a range."""
    if param.choices is not None:
        return [c for c in param.choices if c != DEFAULT]
    rng = param.int_range if param.int_range is not None else param.float_range
    return list(dict.fromkeys(rng or []))


def produced_args(space: Space, argv: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """(space key, args) for the command's own options, every param value's args and the
    screening launches' args."""
    yield "server.command", list(argv[len(command_prefix(argv)) :])
    for name, param in space.spec.params.items():
        if param.args is None:
            continue
        for value in param_values(param):
            settings = settings_from_params(space.spec, {name: value})
            yield f"params.{name}", list(settings.args)
    if space.spec.screening is not None and space.spec.screening.args:
        yield "screening.args", list(space.spec.screening.args)


def produced_env(space: Space) -> Iterator[tuple[str, str, str | None]]:
    """(space key, variable, value) for the fixed env, every value of each env param and
    the screening launches' env.

    The value is None for a param with no value to try (a range with no ends).
    """
    for name, value in space.spec.server.env.items():
        yield f"server.env.{name}", name, value
    for pname, param in space.spec.params.items():
        if param.env is None:
            continue
        values = param_values(param)
        if not values:
            yield f"params.{pname}", param.env, None
        for choice in values:
            settings = settings_from_params(space.spec, {pname: choice})
            yield f"params.{pname}", param.env, settings.env.get(param.env)
    if space.spec.screening is not None:
        for name, value in space.spec.screening.env.items():
            yield f"screening.env.{name}", name, value
