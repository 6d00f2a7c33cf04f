"""The exit codes of every tuner command: part of the interface that scripts and batch jobs read.

========  ===============================================================================
code      meaning
========  ===============================================================================
0         done: ``tuner run`` stopped with an answer (plateau, futile, budget, exhausted space)
1         tuner could not do it: the database, a server that cannot be stopped, a bug
2         bad input: the space file or an option is wrong, or ``tuner check`` found errors
          (typer's own usage errors are 2 as well)
3         ``tuner run``: every launch failed, so there is no answer (see ``tuner trials``)
130       interrupted by Ctrl-C (SIGINT); the study resumes with the same command
========  ===============================================================================
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
ERROR: Final = 1
CONFIG: Final = 2
ALL_FAILED: Final = 3
INTERRUPTED: Final = 130

_BY_STOP_REASON: Final = {"all_failed": ALL_FAILED, "interrupted": INTERRUPTED}


def for_stop_reason(reason: str) -> int:
    """The exit code of ``tuner run`` for the study's stop reason."""
    return _BY_STOP_REASON.get(reason, OK)
