"""The one error tree of tuner; the CLI turns any of these into ``Error: ...`` and exit 1.

::

    TunerError
    ├── ConfigError      a space file or an option is wrong (names the file, key and fix)
    ├── LaunchError      the server did not start, died, or could not be stopped cleanly
    ├── BenchmarkError   the benchmark could not measure (no model, every request failed)
    └── StoreError       the study database cannot be opened or written
"""

from __future__ import annotations


class TunerError(Exception):
    """Base of every error tuner raises on purpose."""


class ConfigError(TunerError):
    """A space file, a CLI option or a combination of them is invalid."""


class LaunchError(TunerError):
    """The server failed to start, exited early, or left something behind.

    ``reason`` is a one-line cause fit for the trials table; ``log_tail`` is the
    last lines the server wrote, kept so a failed trial can be understood later.
    """

    def __init__(
        self,
        reason: str,
        *,
        exit_code: int | None = None,
        log_tail: str = "",
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.exit_code = exit_code
        self.log_tail = log_tail


class BenchmarkError(TunerError):
    """The benchmark could not produce a measurement."""


class StoreError(TunerError):
    """The study database cannot be opened, migrated or written."""
