"""The `tuner` command line: each command parses, calls one library function, renders.

No SQL and no loops over trials here; those live in tuner/study/, tuner/views/ and
friends. ``common`` holds the app, the shared options and the error handling (exit
codes: tuner/exit_codes.py and the README); ``study_commands`` the commands of a study
(run, check, best, report, ...); ``tool_commands`` bench, sim and probe; ``init_command``
`tuner init` (a space file for a server command).
"""

from __future__ import annotations

from tuner.cli import (  # noqa: F401  (they register commands)
    init_command,
    study_commands,
    tool_commands,
)
from tuner.cli.common import app, err, handles_errors, out

__all__ = ["app", "err", "handles_errors", "main", "out"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="tuner")


if __name__ == "__main__":  # pragma: no cover
    main()
