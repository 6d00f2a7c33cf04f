"""The exit codes of every tuner command: part of the interface that scripts and batch jobs read.

========  ===============================================================================
code      meaning
========  ===============================================================================
0         done: ``tuner run`` stopped with an answer (plateau, futile, budget, exhausted
          space, the probe's verdict), or this worker's ``--worker-trials`` are used
1         tuner could not do it: the database (or one a newer tuner upgraded), a server
          that cannot be stopped, a bug
2         bad input: the space file or an option is wrong (``--format xml``), or
          ``tuner check`` found errors (typer's own usage errors are 2 as well); a
          study of other hardware, or a second live worker on a SQLite study
3         no answer: ``tuner run`` saw every launch fail; ``tuner best`` or
          ``tuner report`` found no completed trial yet (see ``tuner trials``)
4         the study database cannot be used as it is: damaged, not a SQLite database,
          locked by another process, read-only (for a command that writes), or another
          program's database; the one error line names the file and the fix
          (``tuner check`` lists it among its findings and exits 2)
5         ``tuner best`` (every format but nccl-tuner): the answer is not settled yet: a
          candidate neither confirmed nor ruled out; it prints the defaults to deploy
          until it is, and the ``tuner run --trials`` that resumes the study to settle it
          (a settled answer, confirmed or no gain, exits 0; docs/deploy.md)
129       stopped by SIGHUP (128 + 1): the terminal closed; the study resumes
130       interrupted by Ctrl-C (SIGINT); the study resumes with the same command
143       stopped by SIGTERM (128 + 15): a batch scheduler (Slurm, Kubernetes) or ``kill``
========  ===============================================================================

``tuner dashboard`` exits with optuna-dashboard's own code; ``tuner sim`` with the
simulator's.
"""

from __future__ import annotations

import signal
from typing import Final

OK: Final = 0
ERROR: Final = 1
CONFIG: Final = 2
NO_ANSWER: Final = 3
ALL_FAILED: Final = NO_ANSWER
DATABASE: Final = 4
NOT_SETTLED: Final = 5
HANGUP: Final = 128 + signal.SIGHUP
INTERRUPTED: Final = 130
TERMINATED: Final = 128 + signal.SIGTERM

_BY_STOP_REASON: Final = {"all_failed": ALL_FAILED, "interrupted": INTERRUPTED}


def for_stop_reason(reason: str) -> int:
    """The exit code of ``tuner run`` for the study's stop reason."""
    return _BY_STOP_REASON.get(reason, OK)


def for_signal(signum: int) -> int:
    """The exit code after stopping on a signal: 128 + its number, as a shell reports it."""
    return 128 + signum
