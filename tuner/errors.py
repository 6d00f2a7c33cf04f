"""The one error tree of tuner; the CLI turns any of these into ``Error: ...`` and exit 1.

ConfigError exits 2, NoAnswerError 3 and UnusableDatabaseError 4 instead
(tuner/exit_codes.py).

::

    TunerError
    ├── ConfigError      a space file or an option is wrong (names the file, key and fix)
    ├── LaunchError      the server did not start, died, or could not be stopped cleanly
    │   └── PortTakenError   its port was taken (another process bound it first)
    ├── BenchmarkError   the benchmark could not measure (no model, every request failed)
    ├── StoreError       the study database cannot be opened or written
    │   └── UnusableDatabaseError  the file is damaged, locked, read-only or not a study
    │                              database (exit 4; tuner/storage/health.py)
    └── NoAnswerError    the study has no answer yet: no completed trial (exit 3)

Outside the tree, ``Terminated`` is how SIGTERM and SIGHUP reach the code: not an
error but a stop from outside, handled like Ctrl-C (tuner/launcher/registry.py).
"""

from __future__ import annotations

import signal


class TunerError(Exception):
    """Base of every error tuner raises on purpose."""


class ConfigError(TunerError):
    """A space file, a CLI option or a combination of them is invalid."""


class LaunchError(TunerError):
    """The server failed to start, exited early, or left something behind.

    ``reason`` is a one-line cause fit for the trials table; ``log_tail`` is the
    last lines the server wrote, kept so a failed trial can be understood later;
    ``cause`` is the failure's cause when the launcher read it from a longer tail
    (tuner/launcher/failure_cause.py names them).
    """

    def __init__(
        self,
        reason: str,
        *,
        exit_code: int | None = None,
        log_tail: str = "",
        cause: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code
        self.log_tail = log_tail
        self.cause = cause


class PortTakenError(LaunchError):
    """The server's port was taken: something else listened on it before the server
    bound it. The configuration is not at fault; with ``server.port: auto`` the runner
    launches it again on another port (tuner/trial/runner.py)."""


class BenchmarkError(TunerError):
    """The benchmark could not produce a measurement."""


class StoreError(TunerError):
    """The study database cannot be opened, migrated or written."""


class UnusableDatabaseError(StoreError):
    """The study database is there but cannot be used as it is: damaged, not a SQLite
    database, locked by another process, read-only, or another program's database.

    ``kind`` says which (``damaged``, ``not_sqlite``, ``locked``, ``read_only``,
    ``foreign``, ``unreadable``, ``io``, ``full``); the message names the file, what is
    wrong and what to do (tuner/storage/health.py)."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class NoAnswerError(TunerError):
    """The study is readable but holds no answer yet: no configuration was measured."""


class Terminated(KeyboardInterrupt):
    """tuner got SIGTERM or SIGHUP (a batch scheduler, a closed terminal): stop like Ctrl-C.

    A KeyboardInterrupt on purpose. optuna marks the running trial FAIL and re-raises
    only for an Exception or a KeyboardInterrupt; any other BaseException (SystemExit)
    leaves the trial RUNNING. Library code's ``except Exception`` does not swallow it,
    and every stop path written for Ctrl-C (the server stop, the trial's record) runs.
    Code that tells the two apart catches Terminated first.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def signal_name(self) -> str:
        """``SIGTERM``, ``SIGHUP``."""
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def reason(self) -> str:
        """The reason kept on the launch and the trial."""
        return f"terminated by signal ({self.signal_name})"

    def __str__(self) -> str:
        return self.reason
