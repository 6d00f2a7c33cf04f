"""The database driver a storage URL needs, and the error that says how to install it.

SQLAlchemy imports a URL's driver (its DBAPI module) when an engine is made: a
``postgresql+psycopg://`` URL without psycopg installed fails there, in tuner's engine
(tuner/storage/store.py), optuna's (tuner/study/run/optuna_rdb.py) or optuna-dashboard's, with
"No module named 'psycopg'" or optuna's "Failed to import DB access module". Each of
those ImportErrors becomes ``missing_driver``'s StoreError instead: the URL (its password
hidden), the driver, and the command that installs it (the ``postgres`` extra for
psycopg). ``require_driver`` checks before a command does anything else: where the
first use of the URL is not tuner's own code (optuna's study listing, the dashboard), or
comes late (`tuner bench --record` stores after measuring).
"""

from __future__ import annotations

import sys

from tuner.errors import StoreError
from tuner.secrets import safe_url

POSTGRES_DRIVER = "psycopg"
"""The PostgreSQL driver of the ``postgres`` extra (pyproject.toml)."""
POSTGRES_INSTALL = "pip install 'launch-tuner[postgres]'"


def require_driver(url: str) -> None:
    """Import the driver of ``url``; StoreError (``missing_driver``) when it is not installed.

    A URL SQLAlchemy cannot read (a typo in the dialect) is left to the engine's own error.
    """
    from sqlalchemy.engine import make_url  # SQLAlchemy's import is not free
    from sqlalchemy.exc import ArgumentError

    try:
        dialect = make_url(url).get_dialect()
    except (ArgumentError, ValueError):
        return
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        raise missing_driver(url, exc) from exc


def missing_driver(url: str, exc: ImportError) -> StoreError:
    """The error for ``url`` when importing its driver raised ``exc``: which driver is
    missing and how to install it; the URL's password never shows."""
    backend, driver = _backend_and_driver(url)
    module = _missing_module(exc)
    named = f"{driver or '?'} ({backend})" if backend else (driver or "?")
    if module and module.lower() != (driver or "").lower():
        named += f", no module named {module!r}"
    if driver == POSTGRES_DRIVER:
        fix = POSTGRES_INSTALL
    elif backend == "postgresql":
        fix = (
            f"install {driver}, or use the driver tuner's postgres extra installs: "
            f"{POSTGRES_INSTALL} and a postgresql+{POSTGRES_DRIVER}:// URL"
        )
    else:
        fix = "install the package that provides it"
    return StoreError(
        f"cannot open storage {safe_url(url)!r}: its database driver {named} is not "
        f"installed in this Python ({sys.executable}): {fix}"
    )


def _backend_and_driver(url: str) -> tuple[str | None, str | None]:
    """``("postgresql", "psycopg")`` for ``postgresql+psycopg://...``; SQLAlchemy's
    default driver for a URL that names none (None where the URL cannot be read)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None, None
    backend = parsed.get_backend_name()
    try:
        return backend, parsed.get_driver_name()
    except (ArgumentError, ValueError):
        return backend, None


def _missing_module(exc: BaseException | None) -> str | None:
    """The module an ImportError (or the one it wraps: optuna's) could not import."""
    while exc is not None:
        if isinstance(exc, ImportError) and exc.name:
            return exc.name.partition(".")[0]
        exc = exc.__cause__
    return None
