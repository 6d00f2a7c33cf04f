"""The study database: tuner's tables beside optuna's (``tables``) and their API (``store``)."""

from tuner.storage.store import DEFAULT_STORAGE, REDACTED, Store, redact_argv, redact_env
from tuner.storage.tables import LaunchRow, LaunchStatus, request_row, utcnow

__all__ = [
    "DEFAULT_STORAGE",
    "REDACTED",
    "LaunchRow",
    "LaunchStatus",
    "Store",
    "redact_argv",
    "redact_env",
    "request_row",
    "utcnow",
]
