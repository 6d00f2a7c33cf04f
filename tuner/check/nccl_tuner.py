"""The tables NCCL's example tuner plugin would read: there, readable, and loaded at all.

The plugin never fails a server (docs/deploy.md, "nccl-tuner"): a missing file, a line it
cannot read, or no plugin to read the file leaves NCCL's own choice, so every launch with
such a table runs the defaults under another name, a model load wasted. For each value
the space gives NCCL_TUNER_CONFIG_FILE (its fixed env, each param's values, screening's
env) this check reads the file by the rules tuner writes it with
(tuner/probe/plugin_table.py):

- error: the file does not exist or cannot be read, or a line is not a row the plugin
  reads as written (the line and what is wrong are named);
- error: NCCL_TUNER_PLUGIN is set nowhere (the server's env, a param, screening's env or
  tuner's own environment, which the server inherits), or only to ``none``: NCCL loads
  no tuner plugin and the table is never read; a warning when only a param or screening
  sets it (the launches without it read no table);
- warning: a relative path, which NCCL opens from the server's working directory (tuner's
  own here; the probe and a deployed server run elsewhere): use an absolute path;
- warning: a table with no row (comments only): launches with it run NCCL's own choice.

``{space_dir}`` in a path is the space file's folder, as in the server's env; a path with
another placeholder (made at run time) is not read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tuner.check.report import Findings
from tuner.check.values import produced_env
from tuner.probe.plugin_table import read_table
from tuner.space.spec import Space

CONFIG_FILE = "NCCL_TUNER_CONFIG_FILE"
PLUGIN = "NCCL_TUNER_PLUGIN"
SHOWN_PROBLEMS = 3
"""Bad lines named per file; the rest are counted."""


def check_nccl_tuner(
    space: Space, found: Findings, environ: Mapping[str, str] | None = None
) -> None:
    """Check every tuner plugin table the space points NCCL at (see the module)."""
    environ = os.environ if environ is None else environ
    tables: list[tuple[str, str]] = []
    plugins: list[tuple[str, str]] = []
    for key, name, value in produced_env(space):
        if value is None:
            continue
        if name == CONFIG_FILE:
            tables.append((key, value))
        elif name == PLUGIN and _loads_a_plugin(value):
            plugins.append((key, value))
    if not tables:
        return
    _check_plugin(tables, plugins, environ, found)
    space_dir = str(space.path.resolve().parent)
    for key, value in dict.fromkeys(tables):
        _check_table(key, value.replace("{space_dir}", space_dir), found)


def _loads_a_plugin(value: str) -> bool:
    return bool(value.strip()) and value.strip().lower() != "none"


def _check_plugin(
    tables: list[tuple[str, str]],
    plugins: list[tuple[str, str]],
    environ: Mapping[str, str],
    found: Findings,
) -> None:
    fixed = [key for key, _ in plugins if key.startswith("server.env.")]
    if fixed or _loads_a_plugin(environ.get(PLUGIN, "")):
        return
    key = tables[0][0]
    if plugins:
        found.add(
            "warning",
            plugins[0][0],
            f"{PLUGIN} is set only by {plugins[0][0]}: the launches without it load no "
            f"tuner plugin, so {CONFIG_FILE} ({key}) is read by nothing there; put {PLUGIN} in "
            'server.env (docs/deploy.md, "Searching tables in a study")',
        )
        return
    found.add(
        "error",
        key,
        f"{CONFIG_FILE} is set but {PLUGIN} is not (in server.env, a param or tuner's "
        "environment): NCCL loads no tuner plugin, so the table is never read and every "
        f"launch runs NCCL's own choice; set server.env.{PLUGIN} to the example plugin you "
        'built (docs/deploy.md, "Building and loading the plugin")',
    )


def _check_table(key: str, value: str, found: Findings) -> None:
    if "{" in value and "}" in value:
        return  # a placeholder filled at run time: nothing to read now
    path = Path(value)
    if not path.is_absolute():
        found.add(
            "warning",
            key,
            f"{CONFIG_FILE}={value} is a relative path: NCCL opens it from the server's "
            f"working directory (here {Path.cwd()}), and the probe or a deployed server may "
            f"run elsewhere; give the absolute path ({path.resolve()})",
        )
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        found.add(
            "error",
            key,
            f"{CONFIG_FILE}={value}: no such file ({path.resolve()}): the plugin would log "
            '"Config file ... not found, using defaults" and every launch with it runs '
            "NCCL's own choice; write it with `tuner best --format nccl-tuner > FILE` or fix "
            "the path",
        )
        return
    except OSError as exc:
        found.add(
            "error",
            key,
            f"{CONFIG_FILE}={value}: cannot be read ({exc.strerror or exc}): every launch with "
            "it would run NCCL's own choice; fix the path or the file's permissions",
        )
        return
    table = read_table(text)
    if table.problems:
        shown = "; ".join(f"line {p.line}: {p.message}" for p in table.problems[:SHOWN_PROBLEMS])
        more = len(table.problems) - SHOWN_PROBLEMS
        found.add(
            "error",
            key,
            f"{CONFIG_FILE}={value}: {len(table.problems)} line(s) the tuner plugin would "
            f"not read as written: {shown}"
            + (f"; and {more} more" if more > 0 else "")
            + ' (the format: docs/deploy.md, "nccl-tuner")',
        )
    elif not table.rows:
        found.add(
            "warning",
            key,
            f"{CONFIG_FILE}={value} holds no row (comments only): launches with it run "
            "NCCL's own choice, as the defaults do",
        )
    else:
        found.add(
            "ok",
            key,
            f"{CONFIG_FILE}={value}: {len(table.rows)} row(s), each read as the tuner plugin "
            "reads it",
        )
