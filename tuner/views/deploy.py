"""Deployment text of a configuration: a .env file, a systemd drop-in, or server args.

What `tuner best --format env | systemd | args` prints, to paste into the place that
starts the real server. Values are written as they are stored (no quoting of env
values beyond what each format shows here).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # best.py imports this module to render its report
    from tuner.views.best import ConfigEntry

DEPLOY_FORMATS = ("env", "systemd", "args")


def deployment_text(entry: ConfigEntry, fmt: str) -> str:
    """The settings of ``entry`` in a form to paste: a .env file, a systemd drop-in, or args."""
    if fmt == "env":
        lines = [f"# tuner: trial {entry.trial}"] + [f"{k}={v}" for k, v in entry.env.items()]
        return "\n".join(lines)
    if fmt == "systemd":
        lines = ["[Service]"] + [f'Environment="{k}={v}"' for k, v in entry.env.items()]
        if entry.args:
            lines.append(f"# append to ExecStart: {shlex.join(entry.args)}")
        return "\n".join(lines)
    return shlex.join(entry.args)
