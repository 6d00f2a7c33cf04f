"""`tuner sim --help` in the style of every other command's help (Typer's rich panels).

The simulator keeps argparse: it must read a vLLM command line as vLLM does (a positional
MODEL, ``-O3``, ``-tp 8``, unknown flags accepted with a warning), and a space file runs it
as ``python -m tuner.sim``, whose argparse ``--help`` is what `tuner check` reads the flags
from, as it reads a real vLLM's. So only `tuner sim --help` is drawn here, from the same
parser: one panel per argparse group, each flag with its type and help.
"""

from __future__ import annotations

import argparse

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from tuner.sim.settings import build_parser

USAGE = "tuner sim [OPTIONS] [MODEL]"


def print_sim_help(console: Console) -> None:
    """The simulator's flags as `tuner X --help` shows a command's options."""
    parser = build_parser()
    console.print(Padding(Text.assemble(("Usage: ", "yellow"), (USAGE, "bold")), (1, 1, 0, 1)))
    console.print(Padding(Text(parser.description or ""), (1, 1, 1, 1)))
    formatter = parser._get_formatter()  # argparse's own %(default)s expansion
    # argparse's own "options" group (--help) last, as Typer lists --help last
    groups = sorted(parser._action_groups, key=lambda g: g.title == "options")
    for group in groups:
        rows = [a for a in group._group_actions if a.option_strings]
        if not rows:
            continue
        title = "Options" if group.title == "options" else _sentence(group.title or "", dot=False)
        table = Table(show_header=False, box=None, expand=True, pad_edge=False, padding=(0, 1))
        table.add_column(no_wrap=True, style="bold cyan")
        table.add_column(no_wrap=True, style="bold yellow")
        table.add_column(ratio=1, overflow="fold")
        for action in rows:
            table.add_row(
                Text(", ".join(reversed(action.option_strings)), overflow="fold"),
                Text(_kind(action), overflow="fold"),
                Text(_help(action, formatter), overflow="fold"),
            )
        body: RenderableType = table
        if group.description:
            body = Group(Text(_sentence(group.description), style="dim"), Text(""), table)
        console.print(Panel(body, title=title, title_align="left", border_style="dim"))


def _kind(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        return "<choice>"
    name = action.metavar or getattr(action.type, "__name__", None) or "str"
    text = f"<{name}>" if isinstance(name, str) else "<str>"
    if action.nargs in ("+", "*"):
        text += "..."
    elif action.nargs == "?":
        text = f"[{text}]"
    return text


def _help(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    text = formatter._expand_help(action) if action.help else ""
    first = text.split(":")[0].split(" ")[0]
    text = _sentence(text, capital=first not in (action.choices or ()))
    if action.choices is not None:
        text += f" One of: {', '.join(str(c) for c in action.choices)}."
    return text.strip()


def _sentence(text: str, dot: bool = True, capital: bool = True) -> str:
    """argparse's lower-case fragment as the other commands write help: capital, full stop.

    A first word that is a name ("vLLM", a value such as "auto") keeps its case.
    """
    text = " ".join(text.split())
    if not text:
        return text
    if capital and not text[1:2].isupper():
        text = text[0].upper() + text[1:]
    return text + "." if dot and not text.endswith((".", "?")) else text
