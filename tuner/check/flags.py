"""Every flag the space can produce is one the server accepts, with a value it lists.

The server's flags come from its ``--help`` (:mod:`tuner.check.help`). A flag not there is
an error with the closest match; a unique prefix of a longer flag is a warning (argparse
takes it, until an upgrade adds a second match); a value outside the choices the help lists
is an error. The args a screening launch adds (``screening.args``) are checked the same
way, their errors with the fix for the section. vLLM's own spellings are honoured:
``--a_b`` for ``--a-b``, ``--json-arg.key=v`` for ``--json-arg``, ``-O3`` for
``--optimization-level 3``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence

from tuner.check.help import HelpText, help_choices, help_options
from tuner.check.report import Findings
from tuner.check.values import produced_args
from tuner.space.spec import Space


def check_flags_against_help(
    space: Space, argv: Sequence[str], help_text: HelpText, found: Findings
) -> None:
    """Compare the command's and every param's flags with the server's help."""
    if help_text.problem:
        found.add("warning", "flags", flags_not_checked(help_text.problem))
        return
    options = help_options(help_text.text)
    choices = help_choices(help_text.text)
    bad = 0
    for key, args in produced_args(space, argv):
        for flag, value in _flags_with_values(args):
            if not accepts(flag, options, help_text.vllm_style):
                name = flag.split("=", 1)[0]
                longer = sorted(o for o in options if name.startswith("--") and o.startswith(name))
                if len(longer) == 1:
                    # argparse takes a unique prefix, until an upgrade adds a second match.
                    found.add(
                        "warning",
                        key,
                        f"{flag!r} works only as an abbreviation of {longer[0]}: write it in full",
                    )
                    continue
                bad += 1
                near = difflib.get_close_matches(name, sorted(options), n=1)
                hint = f"; did you mean {near[0]}?" if near else ""
                found.add(
                    "error",
                    key,
                    f"the server does not accept {flag!r} (not in its --help){hint}{_fix(key)}",
                )
                continue
            allowed = choices.get(_canonical(flag, help_text.vllm_style))
            if allowed and value is not None and "{" not in value and value not in allowed:
                bad += 1
                found.add(
                    "error",
                    key,
                    f"{flag.split('=', 1)[0]} {value!r} is not one of the server's choices: "
                    f"{', '.join(sorted(allowed))}{_fix(key)}",
                )
    if not bad:
        source = "cached --help" if help_text.cached else "--help"
        found.add("ok", "params", f"every flag the space can produce is in the server's {source}")


def flags_not_checked(why: str) -> str:
    """The warning when the flags cannot be compared: said, never skipped in silence, so a
    clean report is not read as "every flag is right"."""
    return f"flags not checked: {why}; until it can be, a misspelt flag fails only at launch"


def _fix(key: str) -> str:
    """What to do about a bad flag beyond its own line: for ``screening.args``, every
    screening launch would fail at start, so the section must change."""
    if key != "screening.args":
        return ""
    return (
        "; every screening launch adds it and would fail at start: correct or remove it in "
        "screening.args (vLLM: [--load-format, dummy]), or leave the screening: section "
        "out (every launch is then a full one)"
    )


def accepts(flag: str, options: set[str], vllm_style: bool) -> bool:
    """Whether a server whose help lists ``options`` accepts ``flag`` as written."""
    name = flag.split("=", 1)[0]
    if name in options:
        return True
    if vllm_style and name.startswith("--"):
        # vLLM reads --a_b as --a-b, and --json-arg.key=value as part of --json-arg.
        base = "--" + name[2:].split(".", 1)[0].replace("_", "-")
        if base in options:
            return True
    if vllm_style and name.startswith("-O") and "--optimization-level" in options:
        return True  # -O3 is vLLM's shorthand for --optimization-level 3
    # A short option with its value attached (-O3 for -O 3), as argparse allows.
    return not name.startswith("--") and len(name) > 2 and name[:2] in options


def _canonical(flag: str, vllm_style: bool) -> str:
    name = flag.split("=", 1)[0]
    if vllm_style and name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name


def _flags_with_values(args: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """Each option in args with the value that follows it (or is attached with =)."""
    for i, arg in enumerate(args):
        if not arg.startswith("-") or re.match(r"-\d", arg) or arg in ("-", "--"):
            continue
        if "=" in arg:
            yield arg, arg.split("=", 1)[1]
        elif i + 1 < len(args) and not args[i + 1].startswith("-"):
            yield arg, args[i + 1]
        else:
            yield arg, None
