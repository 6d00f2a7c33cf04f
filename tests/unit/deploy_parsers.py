"""Each deployment format read back by its own parser: bash, systemd, vLLM's config rule.

systemd is asked twice: ``systemd --test`` loads a unit with the drop-in and dumps
what it parsed (Environment= values, ExecStart's argv), and ``systemd-analyze
condition ConditionOSRelease=`` reads a file with the env-file parser that
EnvironmentFile= uses (``$SYSTEMD_OS_RELEASE`` points it at the file). Each returns
None when this machine lacks the tool, so that the test can skip with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SYSTEMD = next(
    (p for p in ("/usr/lib/systemd/systemd", "/lib/systemd/systemd") if os.access(p, os.X_OK)),
    None,
)
_DUMP_PRINT = (
    "import json, os, sys; print(json.dumps({k: os.environ.get(k) for k in sys.argv[1:]}))"
)


def bash_sourced(path: Path, names: Sequence[str]) -> dict[str, str | None]:
    """The variables a shell sets with ``set -a; . FILE``."""
    script = f'set -a; . "$1"; shift; exec "{sys.executable}" -c "$@"'
    done = subprocess.run(
        ["bash", "-c", script, "bash", str(path), _DUMP_PRINT, *names],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    result: dict[str, str | None] = json.loads(done.stdout)
    return result


def bash_words(line: str) -> list[str]:
    """The words a shell makes of ``line``, each as its program would get it."""
    script = 'eval "set -- $1"; for w in "$@"; do printf "%s\\0" "$w"; done'
    done = subprocess.run(
        ["bash", "-c", script, "bash", line], capture_output=True, text=True, check=True
    )
    return done.stdout.split("\0")[:-1]


def systemd_env_file_matches(path: Path, expected: Mapping[str, str]) -> bool | None:
    """Whether systemd's env-file parser reads ``path`` as ``expected`` (None: no tool).

    An empty value is not checked: a condition cannot compare with one ("Invalid argument").
    """
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return None
    conditions = [f"ConditionOSRelease={_condition_word(k, v)}" for k, v in expected.items() if v]
    done = subprocess.run(
        [analyze, "condition", *conditions],
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_OS_RELEASE": str(path), "SYSTEMD_LOG_LEVEL": "info"},
    )
    if "Unknown assignment" in done.stderr or "Failed to parse" in done.stderr:
        return None  # a systemd without ConditionOSRelease=KEY=VALUE (before v249)
    return done.returncode == 0


def _condition_word(name: str, value: str) -> str:
    """``NAME=VALUE`` as one word of a condition: specifiers (%%), quotes, backslashes."""
    text = f"{name}={value}".replace("%", "%%")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_unit_dump(drop_in: str) -> dict[str, Any] | str:
    """What systemd parsed of a unit with this drop-in: its env and ExecStart argv.

    A string is the reason it could not run here. ``systemd --test`` refuses to run as
    root, so as root it runs as nobody (setpriv), from a folder nobody can read.
    """
    if SYSTEMD is None:
        return "no systemd binary here"
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return "running as root without setpriv (systemd --test refuses root)"
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    folder = Path(tempfile.mkdtemp(prefix="tuner-unit-"))
    try:
        folder.chmod(0o755)
        (folder / "tuner-x.service").write_text("[Service]\nExecStart=/bin/true\n")
        (folder / "tuner-x.service.d").mkdir(mode=0o755)
        conf = folder / "tuner-x.service.d" / "tuner.conf"
        conf.write_text(drop_in + "\n")
        conf.chmod(0o644)
        done = subprocess.run(
            [*prefix, SYSTEMD, "--test", "--system", "--unit=tuner-x.service", "--no-pager"],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "SYSTEMD_UNIT_PATH": f"{folder}:",
                "SYSTEMD_LOG_TARGET": "console",
            },
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    block = _unit_block(done.stdout, "tuner-x.service")
    if block is None:
        return f"systemd --test printed no unit (exit {done.returncode}): {done.stderr[-300:]}"
    env = dict(
        line.split(": ", 1)[1].split("=", 1)
        for line in block
        if line.strip().startswith("Environment: ")
    )
    commands = [line.split(": ", 1)[1] for line in block if "Command Line: " in line]
    return {"env": env, "exec": [_dumped_words(c) for c in commands], "warnings": done.stderr}


def _dumped_words(line: str) -> list[str]:
    """The argv of a dumped ``Command Line:``: words bare, or in "..." with \\-escapes
    (systemd's quote_command_line; bash would expand a bare ``~`` or ``*`` in it)."""
    words, i = [], 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        word = []
        if line[i] == '"':
            i += 1
            while line[i] != '"':
                if line[i] == "\\":
                    i += 1
                word.append(line[i])
                i += 1
            i += 1
        else:
            while i < len(line) and line[i] != " ":
                word.append(line[i])
                i += 1
        words.append("".join(word))
    return words


def _unit_block(dump: str, unit: str) -> list[str] | None:
    lines = dump.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"-> Unit {unit}:"), None)
    if start is None:
        return None
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("\t-> Unit ")),
        len(lines),
    )
    return lines[start:end]


def systemd_exec_argv(dumped: Sequence[str]) -> list[str]:
    """The argv systemd runs: its exec-time substitution ($$ is $; $VAR would expand)."""
    out = []
    for word in dumped:
        if re.search(r"(?<!\$)\$(\{|[A-Za-z_])", word.replace("$$", "")):
            raise AssertionError(f"{word!r}: systemd would expand a variable in it")
        out.append(word.replace("$$", "$"))
    return out


def vllm_config_argv(config: Mapping[str, Any]) -> list[str]:
    """The argv vLLM makes of a --config file (FlexibleArgumentParser.load_config_file)."""
    argv: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            if value:
                argv.append("--" + key)
        elif isinstance(value, list):
            argv += ["--" + key, *(str(v) for v in value)]
        else:
            argv += ["--" + key, str(value)]
    return argv
