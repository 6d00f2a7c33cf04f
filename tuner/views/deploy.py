"""Deployment text of a configuration: a .env file, a systemd drop-in, or server args.

What `tuner best --format env | systemd | args` prints, to paste into the place that
starts the real server. Values are written as they are stored (no quoting of env
values beyond what each format shows here). A secret param's value is not stored: it
prints as ``***`` (tuner/secrets.py), with a comment (env, systemd) or a note on
stderr (args, so that ``$(tuner best -f args)`` stays a command line) to set it.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from tuner.secrets import is_redacted

if TYPE_CHECKING:  # best.py imports this module to render its report
    from tuner.views.best import ConfigEntry

DEPLOY_FORMATS = ("env", "systemd", "args")


def deployment_text(entry: ConfigEntry, fmt: str) -> str:
    """The settings of ``entry`` in a form to paste: a .env file, a systemd drop-in, or args."""
    if fmt == "env":
        lines = [f"# tuner: trial {entry.trial}"]
        for k, v in entry.env.items():
            lines += _secret_comment(k, v) + [f"{k}={v}"]
        return "\n".join(lines)
    if fmt == "systemd":
        lines = ["[Service]"]
        for k, v in entry.env.items():
            lines += _secret_comment(k, v) + [f'Environment="{k}={v}"']
        if entry.args:
            lines += [f"# {note}" for note in secret_args_notes(entry)]
            lines.append(f"# append to ExecStart: {shlex.join(entry.args)}")
        return "\n".join(lines)
    return shlex.join(entry.args)


def secret_args_notes(entry: ConfigEntry) -> list[str]:
    """One sentence per secret value in ``entry.args``: it prints as ***, set it yourself."""
    notes = []
    for i, arg in enumerate(entry.args):
        flag, _, value = arg.partition("=")
        if value and is_redacted(value):
            notes.append(f"{flag}: secret, not kept by tuner: put its value in place of ***")
        elif is_redacted(arg) and i > 0:
            notes.append(
                f"{entry.args[i - 1]}: secret, not kept by tuner: put its value in place of ***"
            )
    return notes


def _secret_comment(name: str, value: str) -> list[str]:
    if not is_redacted(value):
        return []
    return [f"# {name}: secret, not kept by tuner: put its value in place of ***"]
