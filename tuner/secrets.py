"""Secrets stay secret: which names hold one, and how tuner writes and prints them hidden.

A value is secret when its name looks like one (``looks_secret``: HF_TOKEN, OPENAI_API_KEY,
DB_PASSWORD, ``--api-key``, ``--hf-token=...``). The server gets the real values; every
copy tuner keeps or shows has ``***`` instead: the launch rows (``redact_env``,
``redact_argv``), the stored space file (``redact_space_text``), the log header, and any
free text that may quote a value, such as a server's log tail or an error
(``secret_values`` then ``scrub``). A storage URL is printed with its password hidden
(``safe_url``, ``scrub_url``). What tuner creates on disk is the owner's only: the SQLite
file (``create_private_file``) and the runs folders (``private_dir``).

A param whose value is a secret (``env: HF_TOKEN`` or ``args: [--api-key, "{value}"]``)
is known to tuner by a tag in place of each choice (``tag_choices``: ``***``, or ``***1``,
``***2`` for several); only the launch swaps the real value back in
(tuner/space/secret_params.py).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import yaml

from tuner.vocabulary import DEFAULT

REDACTED = "***"

# A name is split into words (HF_TOKEN, --api-key, hfToken); a secret is named by its last
# word (KEY, TOKEN: not --max-num-batched-tokens, not --return-tokens-as-token-ids) or by
# a word that only ever means one (PASSWORD anywhere: PGPASSWORD, SECRET_KEY_BASE).
_LAST_WORDS = frozenset({"KEY", "APIKEY", "ACCESSKEY", "PRIVATEKEY", "SECRETKEY"})
_LAST_SUFFIXES = ("TOKEN",)
_ANY_WORDS = frozenset({"SECRET", "SECRETS", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY"})
_ANY_SUFFIXES = ("PASSWORD",)
_TAG = re.compile(r"\*\*\*\d*")
_PLACEHOLDER = re.compile(r"\{\w+\}")
_MIN_SCRUB_LEN = 6  # a shorter "secret" (or "true") would turn half a log into ***


def looks_secret(name: str) -> bool:
    """Whether an env variable or a flag (``--api-key``, ``--hf-token=X``) names a secret."""
    bare = name.lstrip("-").split("=", 1)[0]
    bare = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", bare)  # hfToken -> hf_Token
    words = [w for w in re.split(r"[^A-Za-z0-9]+", bare.upper()) if w]
    if not words:
        return False
    last = words[-1]
    if last in _LAST_WORDS or last.endswith(_LAST_SUFFIXES):
        return True
    return any(w in _ANY_WORDS or w.endswith(_ANY_SUFFIXES) for w in words)


def is_redacted(value: object) -> bool:
    """Whether a stored value is one tuner hid: ``***``, or a secret choice's tag ``***2``."""
    return isinstance(value, str) and _TAG.fullmatch(value) is not None


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Env to store or show: values of names that look like secrets are ``***``."""
    return {k: (REDACTED if looks_secret(k) and not _keep(v) else v) for k, v in env.items()}


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Argv to store or show: the value of a secret-looking flag (``--api-key X``,
    ``--hf-token=X``) is ``***``; a ``{value}`` placeholder stays (a space file's args)."""
    hidden = set(_hidden_positions(argv))
    out = []
    for i, arg in enumerate(argv):
        if i not in hidden:
            out.append(arg)
        elif arg.startswith("-") and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=" + REDACTED)
        else:
            out.append(REDACTED)
    return out


def _hidden_positions(argv: Sequence[str]) -> Iterable[int]:
    """The positions whose value ``redact_argv`` hides."""
    expect_value = False
    for i, arg in enumerate(argv):
        if expect_value and not arg.startswith("--"):  # a flag after it: it was a switch
            expect_value = False
            if not _keep(arg):
                yield i
            continue
        expect_value = False
        if arg.startswith("-") and looks_secret(arg):
            if "=" in arg:
                if not _keep(arg.split("=", 1)[1]):
                    yield i
            else:
                expect_value = True


def _keep(value: str) -> bool:
    """Values shown even under a secret name: nothing, a tag, or a space file placeholder."""
    return not value or is_redacted(value) or _PLACEHOLDER.fullmatch(value) is not None


def secret_values(argv: Sequence[str] = (), env: Mapping[str, str] | None = None) -> set[str]:
    """The real values ``redact_argv`` and ``redact_env`` hide: what ``scrub`` looks for."""
    values = {v for k, v in (env or {}).items() if looks_secret(k) and not _keep(v)}
    for i in _hidden_positions(argv):
        arg = argv[i]
        values.add(arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg)
    return {v for v in values if _worth_scrubbing(v)}


def scrub(text: str, values: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret value replaced by ``***``.

    For free text that may quote a secret: the server's log tail (an old vLLM prints its
    ``--api-key`` at start), an error message that cites the command line.
    """
    for value in sorted(set(values), key=len, reverse=True):  # a longer one may hold a shorter
        if _worth_scrubbing(value):
            text = text.replace(value, REDACTED)
    return text


def _worth_scrubbing(value: str) -> bool:
    """Long enough to be a secret and not a number: replacing it cannot maul the text."""
    return len(value) >= _MIN_SCRUB_LEN and not value.isdigit()


def tag_choices(choices: Sequence[Any]) -> list[Any]:
    """The choices of a secret param as tuner knows them: ``default`` stays, each other
    choice becomes ``***`` (one) or ``***1``, ``***2``... (several), in their order."""
    several = sum(1 for c in choices if c != DEFAULT) > 1
    numbers = itertools.count(1)
    return [
        c if c == DEFAULT else f"{REDACTED}{next(numbers)}" if several else REDACTED
        for c in choices
    ]


def secret_param(param: Mapping[str, Any]) -> bool:
    """Whether a param of a space file (as YAML data) sets a secret: its ``env`` looks
    secret, or its ``{value}`` is the value of a secret-looking flag."""
    env = param.get("env")
    if isinstance(env, str) and looks_secret(env):
        return True
    args = param.get("args")
    if isinstance(args, str):
        args = [args]
    if not isinstance(args, list):
        return False
    words = [str(a) for a in args]
    for i, arg in enumerate(words):
        if "{value}" not in arg:
            continue
        if arg.startswith("-") and "=" in arg and looks_secret(arg):
            return True
        if i > 0 and words[i - 1].startswith("-") and looks_secret(words[i - 1]):
            return True
    return False


def redact_space_text(text: str) -> str:
    """The space file as the study stores it: every secret value ``***``, else verbatim.

    Hidden: values of secret-looking names in ``server.env``, secret flag values in
    ``server.command`` and in params' ``args``, and the choices of a secret param (as
    ``tag_choices`` names them, so the stored space reads back as the sweep ran it).
    The text must be valid YAML (the sweep loaded it); the file is dumped again only
    when something was hidden, so a file without secrets keeps its comments.
    """
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        return text
    changed = False
    server = data.get("server")
    if isinstance(server, dict):
        env = server.get("env")
        if isinstance(env, dict):
            for key, value in env.items():
                if looks_secret(str(key)) and not _keep(str(value)):
                    env[key], changed = REDACTED, True
        changed |= _redact_list(server, "command")
    params = data.get("params")
    if isinstance(params, dict):
        for param in params.values():
            if not isinstance(param, dict):
                continue
            choices = param.get("choices")
            if secret_param(param) and isinstance(choices, list):
                tagged = tag_choices(choices)
                if tagged != choices:
                    param["choices"], changed = tagged, True
            changed |= _redact_list(param, "args")
    if not changed:
        return text
    return "# tuner: secret values hidden (***)\n" + yaml.safe_dump(data, sort_keys=False)


def _redact_list(section: dict[str, Any], key: str) -> bool:
    """Redact the argv list ``section[key]`` in place; whether anything was hidden."""
    argv = section.get(key)
    if not isinstance(argv, list):
        return False
    words = [str(a) for a in argv]
    redacted = redact_argv(words)
    if redacted == words:
        return False
    section[key] = redacted
    return True


def safe_url(url: str) -> str:
    """A storage URL fit to print: the password, if any, shown as ``***``."""
    from sqlalchemy.engine import make_url  # SQLAlchemy's import is not free
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        return re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", url)


def scrub_url(text: str, url: str) -> str:
    """``text`` (an error that may quote the URL or its password) with the password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    text = text.replace(url, safe_url(url))
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError, TypeError):
        match = re.search(r"://[^:/@\s]*:([^@\s]*)@", url)
        password = match[1] if match else None
    if not password:
        return text
    forms = {str(password), quote(str(password), safe=""), quote_plus(str(password))}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(f":{form}@", f":{REDACTED}@")
        if _worth_scrubbing(form):
            text = text.replace(form, REDACTED)
    return text


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    if not url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        database = make_url(url).database
    except (ArgumentError, ValueError):
        return None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def create_private_file(path: Path) -> bool:
    """Create ``path`` empty and readable by its owner only (0600), unless it exists.

    Returns whether it was created. A file the user made is left as it is. SQLite
    gives its -wal and -shm files the database file's mode.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return False  # a missing folder or no permission: the database open says so
    os.close(fd)
    return True


def private_dir(path: Path) -> Path:
    """Create the folder ``path`` owner-only (0700) if it is missing; its parents as usual."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def others_can_read(path: Path) -> bool:
    """Whether the group or others may read ``path`` (False when it does not exist)."""
    try:
        return bool(path.stat().st_mode & 0o044)
    except OSError:
        return False
