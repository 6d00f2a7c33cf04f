"""What every command of the `tuner` command line shares: the app, the consoles, the common
options and the error handling (every TunerError becomes ``Error: ...`` on stderr and
its exit code, tuner/exit_codes.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.highlighter import Highlighter
from rich.markup import escape
from rich.text import Text

from tuner import exit_codes
from tuner.errors import (
    ConfigError,
    NoAnswerError,
    Terminated,
    TunerError,
    UnusableDatabaseError,
)

app = typer.Typer(
    name="tuner",
    help=(
        "Find the best launch settings (NCCL variables, vLLM flags) for an LLM inference "
        "server, and tell a real gain from noise.\n\n"
        "Start with:  tuner run --space search_spaces/sim.yaml --trials 20"
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
out = Console()
err = Console(stderr=True)


def _print_versions(asked: bool) -> None:
    """``--version``: tuner's version and the vLLM, torch, NCCL and driver it finds, each
    "not found" where missing (tuner/telemetry/versions.py); then exit."""
    if not asked:
        return
    from tuner.telemetry.versions import version_lines

    for line in version_lines():
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print tuner's version and the vLLM, torch, NCCL and driver versions it "
            "finds, then exit.",
            callback=_print_versions,
            is_eager=True,
        ),
    ] = False,
) -> None:
    # The app's own options; each command's are its own.
    pass


class _Folding(Highlighter):
    """Another highlighter's colours, on text that folds a word too wide for its column."""

    def __init__(self, inner: Highlighter) -> None:
        self.inner = inner

    def highlight(self, text: Text) -> None:
        self.inner.highlight(text)
        text.overflow = "fold"


def _fold_help_words() -> None:
    """Fold, never cut, a word wider than its column of a ``--help`` panel.

    Typer renders an option's name and help with rich's default overflow, which cuts such a
    word with '…' (``sqlite:///experiments.…`` at 80 columns); folding keeps every character.
    Typer has no setting for it, so its two builders are wrapped; an older or newer Typer
    without them keeps its own rendering.
    """
    from typer import rich_utils

    build = getattr(rich_utils, "_get_parameter_help", None)
    if build is None or getattr(build, "tuner_folds", False):
        return

    def folded(**kwargs: Any) -> Any:
        columns = build(**kwargs)
        for item in getattr(columns, "renderables", ()):
            if isinstance(item, Text):
                item.overflow = "fold"
        return columns

    folded.tuner_folds = True  # type: ignore[attr-defined]
    rich_utils._get_parameter_help = folded
    for name in ("highlighter", "negative_highlighter"):
        inner = getattr(rich_utils, name, None)
        if isinstance(inner, Highlighter):
            setattr(rich_utils, name, _Folding(inner))


_fold_help_words()

F = TypeVar("F", bound=Callable[..., Any])

SpaceOpt = Annotated[
    Path, typer.Option("--space", "-s", help="Space file, or the name of a shipped one.")
]
StorageOpt = Annotated[
    str,
    typer.Option("--storage", help="SQLAlchemy URL of the study database.", envvar="TUNER_STORAGE"),
]
StudyOpt = Annotated[
    str | None, typer.Option("--study", help="Study name (default: from the space file).")
]
ReadStudyOpt = Annotated[
    str | None,
    typer.Option(
        "--study", help="Study name (default: the --space file's, else the only one stored)."
    ),
]
OptSpaceOpt = Annotated[
    Path | None, typer.Option("--space", "-s", help="Space file whose study to read.")
]
TABLE_OR_JSON = ("table", "json")


def handles_errors(func: F) -> F:
    """Print a TunerError as one `Error:` line and exit 2 (bad input) or 1.

    Ctrl-C exits 130; SIGTERM and SIGHUP (``Terminated``) 128 + the signal's number.
    A database error no code caught (a page found damaged in the middle of a read)
    is one line too, naming the command's --storage and the fix (exit 4 for a damaged,
    locked or read-only file: tuner/storage/health.py). ``TUNER_DEBUG=1`` shows the
    traceback instead of any of these lines.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return func(*args, **kwargs)
            except (TunerError, KeyboardInterrupt, typer.Exit):
                raise
            except Exception as exc:
                said = _database_error(kwargs.get("storage"), exc)
                if said is None:
                    raise
                raise said from exc
        except TunerError as exc:
            if os.environ.get("TUNER_DEBUG"):
                raise  # the traceback, with the database's own error under it
            # The message is text, not markup: "[dashboard]" or "[1, 8]" must print as is;
            # and one line, not cut at the console's width (a path or a fix stays whole).
            err.print(f"[bold red]Error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(exit_code(exc)) from None
        except Terminated as stop:
            err.print(
                f"[yellow]Stopped by {stop.signal_name}.[/] Run the same command again to resume."
            )
            raise typer.Exit(exit_codes.for_signal(stop.signum)) from None
        except KeyboardInterrupt:
            err.print("[yellow]Interrupted.[/] Run the same command again to resume.")
            raise typer.Exit(exit_codes.INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


def _database_error(storage: object, exc: Exception) -> TunerError | None:
    """The one-line error of a database error in ``exc``'s chain; None for any other."""
    from tuner.storage.health import database_error  # SQLAlchemy's import: only on errors

    return database_error(storage if isinstance(storage, str) else None, exc)


def exit_code(exc: TunerError) -> int:
    if isinstance(exc, UnusableDatabaseError):
        return exit_codes.DATABASE
    if isinstance(exc, ConfigError):
        return exit_codes.CONFIG
    if isinstance(exc, NoAnswerError):
        return exit_codes.NO_ANSWER
    return exit_codes.ERROR


def check_format(fmt: str, choices: Sequence[str], option: str = "--format") -> None:
    """Refuse an unknown --format before any work (a benchmark takes minutes)."""
    if fmt not in choices:
        listed = " or ".join([", ".join(choices[:-1]), choices[-1]])
        raise ConfigError(f"{option} must be {listed}, not {fmt!r}")
