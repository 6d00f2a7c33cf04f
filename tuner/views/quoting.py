"""Quoting a value for each place a deployment goes: a shell, a systemd unit, an env file.

Each function returns text that the format's own parser reads back as the exact value
(tests/unit/test_deploy_formats.py parses every one back: bash, shlex, systemd itself).
A value with a control character (a newline above all) is refused by
``check_deployable``: an env file and a unit file hold one setting per line, and no
NCCL variable or vLLM flag needs one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

from tuner.errors import ConfigError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A systemd command-line word that needs no quotes (no %, $, quotes, backslash, ;, space).
_SYSTEMD_BARE = re.compile(r"[A-Za-z0-9_@+=:,./-]+")
# A first word starting with one of these is read as a prefix (`-` ignores failure...).
_EXEC_PREFIXES = "@-:+!"


def check_deployable(env: Mapping[str, str], args: Iterable[str]) -> None:
    """Refuse what no format can carry: a control character, an env name a shell can't set."""
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise ConfigError(
                f"environment variable {name!r}: not a name a shell or systemd can set "
                "(letters, digits and _, not starting with a digit); rename it in the "
                "space file's params"
            )
        if _CONTROL.search(value):
            raise ConfigError(
                f"{name}={value!r}: the value has a control character (a newline?); "
                "env and unit files hold one setting per line: change the choice in the "
                "space file"
            )
    for arg in args:
        if _CONTROL.search(arg):
            raise ConfigError(
                f"argument {arg!r} has a control character (a newline?); change the "
                "choice in the space file"
            )


def shell_word(value: str) -> str:
    """One word for a POSIX shell (shlex.quote: bare when safe, else '...')."""
    return shlex.quote(value)


def env_file_line(name: str, value: str) -> str:
    """``NAME=value`` that systemd's EnvironmentFile= and a shell's ``. file`` read alike.

    shlex.quote's form: bare when only safe characters, else single quotes, a single
    quote itself as ``'"'"'``. systemd reads a '...' part verbatim and a "..." part
    with shell escapes, and joins the parts as a shell does.
    """
    return f"{name}={shell_word(value)}"


def systemd_environment(name: str, value: str) -> str:
    """An ``Environment=`` line: the assignment in double quotes, C-style escapes.

    systemd expands specifiers first (``%%`` is a percent sign), then unquotes with
    C escapes (``\\\\`` and ``\\"``). ``$`` means nothing in Environment= (systemd.exec(5)).
    """
    text = f"{name}={value}".replace("%", "%%")
    return 'Environment="' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_exec_word(word: str, *, first: bool = False) -> str:
    """One word of an ``ExecStart=`` line, read back by systemd as ``word``.

    ``%`` is ``%%`` (specifiers) and ``$`` is ``$$`` (systemd substitutes $VAR when it
    runs the command); a word with anything beyond safe characters is double-quoted
    with C escapes; a lone ``;`` (which would end the command) is ``\\;``. A program
    whose name starts with a prefix character is refused: systemd reads that character
    as a prefix (``-`` is "ignore failure") even in quotes.
    """
    if first and word[:1] in _EXEC_PREFIXES:
        raise ConfigError(
            f"server command {word!r}: systemd reads a leading {word[0]!r} as an ExecStart= "
            "prefix, not as the program's name; name the program by its absolute path "
            "in the space file's server.command"
        )
    if word == ";":
        return "\\;"
    text = word.replace("%", "%%").replace("$", "$$")
    if _SYSTEMD_BARE.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_exec_line(argv: Iterable[str]) -> str:
    """An ``ExecStart=`` value: each word quoted for systemd."""
    return " ".join(systemd_exec_word(w, first=i == 0) for i, w in enumerate(argv))
