"""The server's ``--help``: read once per installed command, cached, and parsed for flags.

vLLM lists only its option groups in ``--help``; every option, with its aliases, is in
``--help=all``, so a vLLM command is asked for that. The text is cached per command under
``default_cache_dir()`` with a key that changes when the program is reinstalled (and, for
a ``python SCRIPT.py`` server, when the script is edited), because reading vLLM's help
imports torch (10 to 30 s). ``help_options`` and ``help_choices``
pull the flags and their listed values out of argparse-style help text.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tuner.check.command import command_prefix, python_module, python_script

HELP_TIMEOUT_S = 180.0
"""Reading vLLM's --help imports torch: 10 to 30 s on a small CPU."""


@dataclass(frozen=True)
class HelpText:
    """What a command printed for ``--help``, or why it could not be read."""

    text: str = ""
    vllm_style: bool = False
    problem: str | None = None
    cached: bool = False


HelpReader = Callable[[list[str], Mapping[str, str], float], tuple[int | None, str]]
"""Runs ``argv`` with ``env`` for at most ``timeout_s``: (exit code or None on timeout, output)."""


def server_help(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cache_dir: Path | None = None,
    timeout_s: float = HELP_TIMEOUT_S,
    read_help: HelpReader | None = None,
) -> HelpText:
    """The server's ``--help`` (``--help=all`` for vLLM's grouped help), cached per command."""
    prefix = command_prefix(argv)
    cache = (cache_dir or default_cache_dir()) / f"{_help_key(prefix)}.json"
    with contextlib.suppress(OSError, ValueError, KeyError):
        data = json.loads(cache.read_text())
        return HelpText(text=data["text"], vllm_style=bool(data["vllm_style"]), cached=True)
    reader = read_help or run_help
    text, vllm_style = "", False
    if any("vllm" in part.lower() for part in prefix):
        # Asking for --help=all first saves a second import of torch (10 to 30 s).
        code, text = reader(prefix + ["--help=all"], env, timeout_s)
        vllm_style = code == 0 and bool(help_options(text))
    if not vllm_style:
        shown = " ".join(prefix + ["--help"])
        code, text = reader(prefix + ["--help"], env, timeout_s)
        if code is None:
            return HelpText(problem=f"`{shown}` did not finish in {timeout_s:.0f} s")
        if code != 0 or not help_options(text):
            tail = " ".join(text.strip().splitlines()[-1:])[:200]
            return HelpText(problem=f"`{shown}` exited with code {code}: {tail}")
        vllm_style = "Config Groups" in text
        if vllm_style:
            code, full = reader(prefix + ["--help=all"], env, timeout_s)
            if code == 0 and help_options(full):
                text = full
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_suffix(".tmp")
        partial.write_text(
            json.dumps(
                {"argv": prefix, "vllm_style": vllm_style, "text": text, "created": time.time()}
            )
        )
        partial.replace(cache)
    return HelpText(text=text, vllm_style=vllm_style)


def default_cache_dir() -> Path:
    """``$TUNER_CACHE_DIR/help``, else ``$XDG_CACHE_HOME/tuner/help``, else ~/.cache/tuner/help."""
    root = os.environ.get("TUNER_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "help"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "tuner" / "help"


def _help_key(prefix: Sequence[str]) -> str:
    """The command, plus what changes when it is reinstalled (so an upgrade reads --help
    anew) or, for ``python SCRIPT.py``, when the script is edited: its file, modification
    time and size."""
    stamps: list[str] = []
    exe = shutil.which(prefix[0]) or prefix[0]
    with contextlib.suppress(OSError):
        stamps.append(str(Path(exe).resolve().stat().st_mtime_ns))
    script = python_script(prefix)
    if script is not None:
        with contextlib.suppress(OSError):
            path = Path(script).resolve()  # from the working directory, as run_help runs it
            stat = path.stat()
            stamps += [str(path), str(stat.st_mtime_ns), str(stat.st_size)]
    module = python_module(prefix)
    if module is not None:
        with contextlib.suppress(ImportError, ValueError, AttributeError, OSError, IndexError):
            spec = importlib.util.find_spec(module.split(".")[0])
            if spec is not None and spec.submodule_search_locations:
                top = Path(list(spec.submodule_search_locations)[0])
                stamps.append(str(top.stat().st_mtime_ns))
    blob = json.dumps([list(prefix), exe, stamps])
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def run_help(argv: list[str], env: Mapping[str, str], timeout_s: float) -> tuple[int | None, str]:
    """Run a --help command in its own session; kill the whole group if it overstays."""
    proc = subprocess.Popen(
        argv,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, ""
    return proc.returncode, out.decode(errors="replace")


_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w.-]*)")
_BRACE_CHOICES = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)[ =]\{([^{}\s]+)\}")
_LIST_CHOICES = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*) \[('[^\[\]]+')\]")


def help_options(text: str) -> set[str]:
    """Every option a help text mentions (``-O``, ``--port``; not negative numbers)."""
    return {m.rstrip(".,") for m in _OPTION.findall(text) if not re.match(r"-\d", m)}


def help_choices(text: str) -> dict[str, set[str]]:
    """The values a help text lists for an option: ``--x {a,b}`` or ``--x ['a', 'b']``."""
    out: dict[str, set[str]] = {}
    for flag, values in _BRACE_CHOICES.findall(text):
        out.setdefault(flag, set()).update(values.split(","))
    for flag, values in _LIST_CHOICES.findall(text):
        out.setdefault(flag, set()).update(re.findall(r"'([^']*)'", values))
    return out
