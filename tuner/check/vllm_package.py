"""Where the vLLM a server command runs is installed, found without importing vLLM.

Importing vllm takes seconds and may touch the GPUs; what tuner needs of it (does its
vllm/envs.py know a variable) is in its files. The interpreter that runs the server is:

- for ``PYTHON [OPTIONS] -m vllm...`` (``{python}`` included), that PYTHON;
- for a ``vllm`` executable (a pip console script), the interpreter of its ``#!`` line.

That interpreter's ``importlib.util.find_spec("vllm")`` names the package's folder: asked
in this process when it is tuner's own interpreter, else of a child ``PYTHON -c`` (with
the server's environment, so a PYTHONPATH it sets counts), within a time limit. None
wherever the answer is unknown: no interpreter found, no vllm there, a child that fails.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuner.check.command import is_python, python_module

ASK_TIMEOUT_S = 30.0
"""A child interpreter asked where vllm lies: seconds (a cold start of a large venv)."""
_ASK = (
    "import importlib.util as u; s = u.find_spec('vllm'); "
    "print((s.submodule_search_locations or [''])[0] if s else '')"
)


def server_interpreter(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The Python that runs this command's vLLM (see the module); None when it has none."""
    if not argv:
        return None
    if python_module(argv) is not None:
        return _on_path(argv[0], env)
    exe = _on_path(argv[0], env)
    if exe is None or "vllm" not in Path(exe).name.lower():
        return None
    return _shebang(Path(exe), env)


def vllm_package_dir(argv: Sequence[str], env: Mapping[str, str]) -> Path | None:
    """The folder of the vllm package this command runs, or None (see the module)."""
    python = server_interpreter(argv, env)
    if python is None:
        return None
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        found = _find_here()
    else:
        found = _ask(python, env.get("PYTHONPATH", ""))
    return Path(found) if found else None


def _find_here() -> str:
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return ""
    return (spec.submodule_search_locations or [""])[0] if spec else ""


@functools.lru_cache(maxsize=16)
def _ask(python: str, pythonpath: str) -> str:
    """What ``python`` says of vllm's folder ('' for nothing); cached: a run asks once."""
    env = {**os.environ, "PYTHONPATH": pythonpath} if pythonpath else dict(os.environ)
    try:
        done = subprocess.run(
            [python, "-c", _ASK],
            capture_output=True,
            text=True,
            timeout=ASK_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _on_path(exe: str, env: Mapping[str, str]) -> str | None:
    if os.sep in exe:
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which(exe, path=env.get("PATH", os.environ.get("PATH")))


def _shebang(script: Path, env: Mapping[str, str]) -> str | None:
    """The interpreter of a script's ``#!`` line (``#!/usr/bin/env python3`` too)."""
    try:
        with script.open("rb") as f:
            first = f.readline(512).decode(errors="replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if not words or not is_python(words[0]):
        return None
    return _on_path(words[0], env)
