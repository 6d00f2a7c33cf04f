"""Does the server command exist: an executable on PATH, or a module ``{python} -m`` can run.

Also ``command_prefix``: which words of a command name the program (and its subcommand)
rather than its options, the part whose ``--help`` lists the flags (:mod:`tuner.check.help`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tuner.check.report import Findings


@dataclass(frozen=True)
class CommandAdvice:
    """What to add to the error when the program or module is missing: the fix for this
    kind of server (tuner.check.server_kind says which; this module knows no kinds)."""

    missing_program: str = ""
    missing_module: str = ": install it there, or run tuner from the environment that has it"


def check_command(
    argv: Sequence[str],
    env: Mapping[str, str],
    found: Findings,
    advice: CommandAdvice | None = None,
) -> bool:
    """Whether the command can start at all; an error item says why not, with ``advice``."""
    advice = advice or CommandAdvice()
    exe = argv[0]
    key = "server.command"
    path = exe if os.sep in exe else shutil.which(exe, path=env.get("PATH"))
    if path is None or not os.access(path, os.X_OK) or not Path(path).is_file():
        found.add("error", key, f"{exe!r} is not an executable on PATH{advice.missing_program}")
        return False
    module = python_module(argv)
    # Not resolved: a venv's python links to the system one but has its own site-packages.
    same_python = os.path.abspath(path) == os.path.abspath(sys.executable)
    if module is not None and same_python and not module_exists(module):
        found.add(
            "error",
            key,
            f"module {module!r} is not installed in {sys.executable}{advice.missing_module}",
        )
        return False
    found.add("ok", key, f"{' '.join(command_prefix(argv))} found")
    return True


def python_module(argv: Sequence[str]) -> str | None:
    """The module of a ``python [OPTIONS] -m MODULE ...`` command, else None."""
    i = after_python_options(argv)
    if i is not None and i + 1 < len(argv) and argv[i] == "-m":
        return argv[i + 1]
    return None


def python_script(argv: Sequence[str]) -> str | None:
    """The script of a ``python [OPTIONS] SCRIPT.py ...`` command, else None."""
    i = after_python_options(argv)
    if i is not None and i < len(argv) and argv[i].endswith(".py"):
        return argv[i]
    return None


def after_python_options(argv: Sequence[str]) -> int | None:
    """Where a python command's own options end (``-u``, ``-O``, ``-X dev``, ``-W error``):
    the index of ``-m`` or of the script; None when argv[0] is not a Python."""
    if not argv or not is_python(argv[0]):
        return None
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("-W", "-X"):
            i += 2  # an option with its value apart: -X dev
        elif re.fullmatch(r"-[WX].+|-[bBdEIOqsSuvx]+", arg):
            i += 1  # -Xdev, -u, -OO, -Bu
        else:
            break
    return i


def module_exists(module: str) -> bool:
    """Whether ``python -m module`` can find it, without importing it (vllm takes seconds)."""
    parts = module.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if len(parts) == 1:
        return True
    dirs = [Path(p) for p in (spec.submodule_search_locations or [])]
    for part in parts[1:-1]:
        dirs = [d / part for d in dirs if (d / part).is_dir()]
    last = parts[-1]
    return any(
        (d / f"{last}.py").is_file()
        or (d / last / "__init__.py").is_file()
        or (d / last / "__main__.py").is_file()
        for d in dirs
    )


def is_python(exe: str) -> bool:
    return bool(re.fullmatch(r"python[\d.]*", Path(exe).name)) or exe == sys.executable


def command_prefix(argv: Sequence[str]) -> list[str]:
    """The part of the command that names the program (and subcommand), not its options.

    ``[python, -m, vllm.entrypoints.openai.api_server, --model, X]`` gives the first three;
    ``[vllm, serve, org/model, -tp, 8]`` gives ``[vllm, serve]``: a model id or path is
    not a subcommand (it has a slash or a dot), so its help is the subcommand's help.
    """
    i = 1
    start = after_python_options(argv)
    if python_module(argv) is not None and start is not None:
        i = start + 2
    elif python_script(argv) is not None and start is not None:
        i = start + 1
    while i < len(argv) and re.fullmatch(r"[A-Za-z][\w-]*", argv[i]):
        i += 1
    return list(argv[:i])
