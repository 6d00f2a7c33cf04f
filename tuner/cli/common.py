"""What every command of the `tuner` command line shares: the app, the consoles, the common
options and the error handling (every TunerError becomes ``Error: ...`` on stderr and
its exit code, tuner/exit_codes.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from tuner import exit_codes
from tuner.errors import ConfigError, NoAnswerError, Terminated, TunerError

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
OptSpaceOpt = Annotated[
    Path | None, typer.Option("--space", "-s", help="Space file whose study to read.")
]
TABLE_OR_JSON = ("table", "json")


def handles_errors(func: F) -> F:
    """Print a TunerError as one `Error:` line and exit 2 (bad input) or 1.

    Ctrl-C exits 130; SIGTERM and SIGHUP (``Terminated``) 128 + the signal's number.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TunerError as exc:
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


def exit_code(exc: TunerError) -> int:
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
