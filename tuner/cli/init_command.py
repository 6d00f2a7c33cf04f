"""`tuner init [--goal G] [--out FILE] -- SERVER COMMAND...`: write a commented space file for
that command on this host, then check it (tuner/init/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tuner import exit_codes
from tuner.cli.common import StorageOpt, app, handles_errors, out
from tuner.storage import DEFAULT_STORAGE


@app.command(
    "init",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    options_metavar="[OPTIONS] -- SERVER COMMAND...",
)
@handles_errors
def init(
    ctx: typer.Context,
    goal: Annotated[
        str,
        typer.Option(
            "--goal",
            "-g",
            help="What to optimise: single-stream (output tok/s of one stream, the default), "
            "latency (median time per output token of one stream) or throughput (output "
            "tok/s at 64 streams).",
        ),
    ] = "single-stream",
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The file to write (default: MODEL-NAME.yaml here)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    storage: StorageOpt = DEFAULT_STORAGE,
) -> None:
    """Write a space file for a server command on this host, then check it.

    The command comes after --, as you would run it: tuner init -- vllm serve /models/X
    --tensor-parallel-size 8. The file gets the params that can act there (NCCL where GPUs
    talk, vLLM flags its --help lists), the probe, screening and startup limit from the
    model and its weights, and the goal's benchmark. What could not be read is said, one
    line each, with what was assumed. Exits 2 when the check finds errors (the file is
    still written).
    """
    from tuner.init import init_space

    # The goal is checked there, before anything is read or written.
    result = init_space(list(ctx.args), storage=storage, goal=goal, out=out_file, force=force)
    _say(f"Wrote {result.path}")
    for note in result.notes:
        _say(f"note: {note}")
    for line in result.report.lines():
        _say(line)
    if not result.report.ok:
        _say(f"Fix the errors above in {result.path}, then: {result.next_command}")
        raise typer.Exit(exit_codes.CONFIG)
    _say(f"Next: {result.next_command}")


def _say(line: str) -> None:
    """One line as is: a path or a flag in brackets is text, never markup, never cut."""
    out.print(line, highlight=False, markup=False, soft_wrap=True)
