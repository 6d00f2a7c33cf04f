"""The server command as `tuner init` writes it, and the names it takes from it.

Every launch listens on this machine only and on a port tuner picks (``port: auto``), so
the command's own ``--host``/``--port`` (either spelling: ``--port 8000``,
``--port=8000``) are taken out and ``--host 127.0.0.1 --port {port}`` put at its end;
everything else stays as given. The study and the default file are named after the
model (``moonshotai/Kimi-K2.5`` -> ``Kimi-K2.5``), else after the program.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import PurePosixPath

from tuner.check.command import command_prefix, python_module
from tuner.space.layout import flag_name
from tuner.space.model_limits import model_argument

HOST = "127.0.0.1"
_HOST_FLAGS = ("--host",)
_PORT_FLAGS = ("--port",)


def served_command(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """``argv`` listening on 127.0.0.1 at ``{port}``, and a note when it said otherwise."""
    kept: list[str] = []
    dropped: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name = flag_name(arg)
        if name in (*_HOST_FLAGS, *_PORT_FLAGS):
            # --port=8000 is one word; --port 8000 two (the value, when there is one).
            takes_next = "=" not in arg and i + 1 < len(args)
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if takes_next else "")
            if (name, value) not in (("--host", HOST), ("--port", "{port}")):
                dropped.append(f"{name} {value}".strip())
            i += 2 if takes_next else 1
            continue
        kept.append(arg)
        i += 1
    command = [*kept, "--host", HOST, "--port", "{port}"]
    if not dropped:
        return command, None
    note = (
        f"replaced {' '.join(dropped)} with --host {HOST} --port {{port}}: each launch listens "
        "on this machine only, on a free port tuner picks (server.port: auto)"
    )
    return command, note


def base_name(argv: Sequence[str]) -> str:
    """The model's last path part (``Kimi-K2.5``), else the program's (``tuner.sim``),
    reduced to letters, digits, ``.``, ``_`` and ``-``: a study name and a file name."""
    argv = [sys.executable if a == "{python}" else a for a in argv]
    model = model_argument(argv)
    if model is not None and PurePosixPath(model.rstrip("/")).name:
        word = PurePosixPath(model.rstrip("/")).name
    else:
        prefix = command_prefix(argv)
        word = python_module(argv) or PurePosixPath(prefix[-1] if prefix else "server").name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", word).strip("-.")
    return cleaned or "server"


def shown(argv: Sequence[str]) -> str:
    """The command as one shell line, for comments and messages."""
    return shlex.join(argv)
