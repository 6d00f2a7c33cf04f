"""A configuration's flags as a YAML file for ``vllm serve MODEL --config FILE``.

vLLM reads each key of that file as a long option (FlexibleArgumentParser.
load_config_file): ``true`` becomes ``--key``, a list ``--key a b``, any other value
``--key str(value)``. So each flag's value is written as the text it was on the
command line: integers bare (``max-num-seqs: 256``), anything else as a YAML string
(``"0.90"`` stays 0.90, ``"true"`` stays a value, not a switch). vLLM's short options
are written under their long names (``-O3`` as ``optimization-level: 3``, ``-tp 2`` as
``tensor-parallel-size: 2``); a word with no long name known is listed in a comment to
pass on the command line. Environment variables cannot go in the file: a comment
names them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from tuner.secrets import is_redacted

SHORT_OPTIONS = {
    "-O": "optimization-level",
    "-tp": "tensor-parallel-size",
    "-pp": "pipeline-parallel-size",
    "-dp": "data-parallel-size",
    "-q": "quantization",
}
"""vLLM's short options and their long names (current vLLM: ``-O`` is the optimization
level; an older vLLM read it as ``--compilation-config``)."""

_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-[0-9.]+([eE][-+]?[0-9]+)?")
_SHORT_ATTACHED = re.compile(r"(-O)=?(.+)")


def vllm_options(args: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The config-file mapping of ``args``, and the words it cannot hold (in order)."""
    options: dict[str, Any] = {}
    leftover: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, value, used = _option(args, i)
        if name is None:
            leftover.append(arg)
            i += 1
            continue
        options[name] = value
        i += used
    return options, leftover


def _option(args: Sequence[str], i: int) -> tuple[str | None, Any, int]:
    """The option starting at ``args[i]``: its key, its value and how many words it took."""
    arg = args[i]
    if arg.startswith("--") and len(arg) > 2:
        name, eq, value = arg[2:].partition("=")
        if eq:
            return _key(name), _value([value]), 1
        values = _values_after(args, i)
        return _key(name), _value(values), 1 + len(values)
    short = _SHORT_ATTACHED.fullmatch(arg)
    if short and short[1] in SHORT_OPTIONS:
        return SHORT_OPTIONS[short[1]], _value([short[2]]), 1
    flag, eq, value = arg.partition("=")
    if flag in SHORT_OPTIONS:
        if eq:
            return SHORT_OPTIONS[flag], _value([value]), 1
        values = _values_after(args, i)
        if values:
            return SHORT_OPTIONS[flag], _value(values), 1 + len(values)
    return None, None, 1


def _values_after(args: Sequence[str], i: int) -> list[str]:
    """The words after a flag that are its values: up to the next option."""
    values = []
    for word in args[i + 1 :]:
        if word.startswith("-") and not _NUMBER.fullmatch(word):
            break
        values.append(word)
    return values


def _key(name: str) -> str:
    """vLLM's spelling: dashes for underscores before the first dot (as its parser does)."""
    head, dot, rest = name.partition(".")
    return head.replace("_", "-") + dot + rest


def _value(values: Sequence[str]) -> Any:
    if not values:
        return True
    items = [int(v) if _INT.fullmatch(v) else v for v in values]
    return items[0] if len(items) == 1 else items


def vllm_config_text(
    args: Sequence[str], env: Mapping[str, str], header: Sequence[str] = ()
) -> str:
    """The YAML file: ``header`` comments, what cannot go in it, then the options."""
    options, leftover = vllm_options(args)
    lines = [f"# {line}" for line in header]
    lines.append("# for: vllm serve MODEL --config THIS_FILE (the command line wins over it)")
    if env:
        lines.append(
            "# environment variables cannot go in a --config file; set them where the "
            "server starts (tuner best --format env):"
        )
        lines += [f"#   {k}={v}" for k, v in env.items()]
    if leftover:
        lines.append(f"# no long name known; pass on the command line: {' '.join(leftover)}")
    secrets = [k for k, v in options.items() if _holds_secret(v)]
    lines += [f"# {k}: secret, not kept by tuner: put its value in place of ***" for k in secrets]
    body = yaml.safe_dump(options, sort_keys=False, allow_unicode=True, width=10**6)
    return "\n".join(lines) + "\n" + body.rstrip("\n")


def _holds_secret(value: Any) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(is_redacted(v) for v in values)
