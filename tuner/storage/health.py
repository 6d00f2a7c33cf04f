"""A study database that cannot be used, said in one line; and opening one only to read it.

**One line per problem.** SQLite and SQLAlchemy report a damaged file as a traceback that
ends in SQL text and a link (optuna wraps it once more as "invalid data in the commit").
``database_error`` finds the database's own error in an exception's chain and says what
it means for the user, with the file and the fix, as an ``UnusableDatabaseError`` (exit
4, tuner/exit_codes.py):

============  ====================================  ==========================================
kind          SQLite says                           the fix
============  ====================================  ==========================================
damaged       database disk image is malformed      restore a backup, or ``sqlite3 FILE .recover``
not_sqlite    file is not a database                check --storage; restore a backup
locked        database is locked                    let the other process finish, or stop it
read_only     attempt to write a readonly database  check permissions, or copy it
unreadable    unable to open database file          check the file, its folder, permissions
io            disk I/O error                        check the disk; copy the file elsewhere
full          database or disk is full              free space on its disk
foreign       (tables of another program)           pass the study's database, or a new file
============  ====================================  ==========================================

Any other database error is a plain StoreError (exit 1) with the database's message,
never its SQL. The CLI turns an error no code caught into this line
(tuner/cli/common.py); ``TUNER_DEBUG=1`` shows the traceback instead.

**Reading creates nothing.** The commands that only read (best, trials, show, compare,
compare-studies, report, dashboard) open a database with ``read_engine`` or ``read_rdb``:
a missing file is an error, never a new empty database; every connection has
``PRAGMA query_only`` on, so nothing can be written to the file; and a file this
process may not write (permissions, a read-only folder) is opened ``mode=ro``, or
``immutable`` when no other process has it open in WAL mode, so that no ``-wal`` or
``-shm`` file is left beside it. A file whose mode has no write bit is read-only to tuner
even for root (``is_read_only``): tuner does not write to it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from tuner.errors import StoreError, UnusableDatabaseError
from tuner.secrets import safe_url, scrub_url, sqlite_file

SQLITE_READ_TIMEOUT_S = 10.0
"""How long a read waits for a SQLite file another process has locked."""

OPTUNA_TABLES = frozenset({"studies", "trials", "version_info"})
"""optuna's tables that every study database has (optuna/storages/_rdb/models.py)."""

HEADER = b"SQLite format 3\x00"

_RECOVER = "sqlite3 {file} .recover | sqlite3 {file}.recovered"


def where(url: str | None) -> str:
    """The database as the user knows it: the file of a SQLite URL, else the URL
    (its password hidden)."""
    if url is None:
        return "the study database"
    path = sqlite_file(url)
    return str(path) if path is not None else safe_url(url)


def _fix(kind: str, url: str | None) -> tuple[str, str]:
    """What is wrong (``kind``) and what to do, for the database at ``url``."""
    path = sqlite_file(url) if url else None
    file = str(path) if path is not None else "FILE"
    recover = _RECOVER.format(file=file)
    copy = f"sqlite:///{file}.recovered" if path is not None else "sqlite:///COPY"
    return {
        "damaged": (
            "the database is damaged",
            f"restore it from a backup, or recover what is readable with `{recover}` and "
            f"pass --storage {copy}",
        ),
        "not_sqlite": (
            "this is not a SQLite database, or its first page is damaged",
            "check that --storage names the study's database; restore it from a backup, "
            f"or try `{recover}`",
        ),
        "locked": (
            "another process holds a lock on the database",
            "let it finish (a running `tuner run`, a sqlite3 shell, a backup) or stop it, "
            "then run this again",
        ),
        "read_only": (
            "the database is read-only",
            f"check the permissions of the file and its folder (ls -l {file}), or copy it "
            "somewhere writable and pass --storage sqlite:///COPY",
        ),
        "unreadable": (
            "the database cannot be opened",
            f"check that the file and its folder exist and this user may read them (ls -l {file})",
        ),
        "io": (
            "reading or writing the file failed on the disk",
            "check the disk (dmesg); copy the file elsewhere and pass --storage "
            "sqlite:///COPY, or restore it from a backup",
        ),
        "full": (
            "the disk of the database is full",
            "free some space on it, then run this again (the study resumes)",
        ),
    }[kind]


_KINDS: tuple[tuple[str, str], ...] = (
    ("malformed", "damaged"),
    ("corrupt", "damaged"),
    ("not a database", "not_sqlite"),
    ("file is encrypted", "not_sqlite"),
    ("database is locked", "locked"),
    ("database table is locked", "locked"),
    ("readonly database", "read_only"),
    ("read-only", "read_only"),
    ("unable to open database", "unreadable"),
    ("disk i/o error", "io"),
    ("database or disk is full", "full"),
)


def unusable(kind: str, url: str | None, detail: str = "") -> UnusableDatabaseError:
    """The one-line error of a database of this ``kind``: the file, what is wrong, the fix."""
    what, fix = _fix(kind, url)
    said = f" ({detail})" if detail else ""
    return UnusableDatabaseError(f"{where(url)}: {what}{said}: {fix}", kind=kind)


def database_error(
    url: str | None, exc: BaseException, *, generic: bool = True
) -> StoreError | None:
    """The one-line error for the database error in ``exc``'s chain (optuna's
    StorageInternalError, SQLAlchemy's, sqlite3's); None when the chain has none, or
    (``generic`` False) when it is none of the kinds above."""
    message = _database_message(exc)
    if message is None:
        return None
    if url is not None:
        message = scrub_url(message, url)
    lowered = message.lower()
    for needle, kind in _KINDS:
        if needle in lowered:
            return unusable(kind, url, message)
    if not generic:
        return None
    return StoreError(f"{where(url)}: the database failed: {message}")


def _database_message(exc: BaseException) -> str | None:
    """The database driver's own message (first line, no SQL), from the first database
    error in the chain of causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = exc
    found: str | None = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, UnusableDatabaseError):
            return None  # said already
        if isinstance(current, sqlite3.Error):
            return _first_line(str(current))
        if isinstance(current, DBAPIError) and current.orig is not None:
            return _first_line(str(current.orig))
        if isinstance(current, SQLAlchemyError) and found is None:
            found = _first_line(str(current).split("[SQL:")[0].split("(Background on")[0])
        current = current.__cause__ or current.__context__
    return found


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "unknown error"
    if first.startswith("(") and ")" in first:  # "(sqlite3.OperationalError) ..."
        first = first.split(")", 1)[1].strip() or first
    return first


# --- what the file is --------------------------------------------------------------------


def is_read_only(path: Path) -> bool:
    """Whether tuner must not write ``path``: no write bit in its mode (read-only even to
    root, who could write it), or this user may not write it or its folder (SQLite writes
    a journal beside it)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return True
    return not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK)


def require_file(url: str) -> Path | None:
    """The file of a SQLite URL, which must exist (StoreError: no such database; opening
    it would create it empty); None for another database."""
    path = sqlite_file(url)
    if path is None:
        return None
    if not path.exists():
        raise StoreError(
            f"{path}: no such database; run `tuner run` here first or pass --storage URL"
        )
    if path.is_dir():
        raise unusable("unreadable", url, "a folder, not a file")
    return path


def sniff(url: str) -> None:
    """Refuse a SQLite file that is not a database before SQLite is asked (its message
    would name a table): shorter than a header, or another header."""
    path = sqlite_file(url)
    if path is None:
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(len(HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise unusable("unreadable", url, exc.strerror or str(exc)) from exc
    if head and head != HEADER:
        raise unusable("not_sqlite", url, "it does not start with a SQLite header")
    size = path.stat().st_size
    if head and size < 512:  # SQLite's smallest page
        raise unusable("damaged", url, f"{size} bytes: cut short")


def tables(engine: Engine, url: str) -> set[str]:
    """The tables of the database (a damaged or foreign file raises its one-line error)."""
    from sqlalchemy import inspect

    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    except SQLAlchemyError as exc:
        raise database_error(url, exc) or StoreError(str(exc)) from exc


def refuse_foreign(found: set[str], url: str) -> None:
    """A database with tables, none of them optuna's or tuner's, is another program's."""
    ours = {t for t in found if t.startswith("tuner_")} | (found & OPTUNA_TABLES)
    if found and not ours:
        listed = ", ".join(sorted(found)[:5]) + (", ..." if len(found) > 5 else "")
        raise UnusableDatabaseError(
            f"{where(url)}: this is not a study database: it holds another program's "
            f"tables ({listed}) and none of optuna's or tuner's: pass the study's "
            "database with --storage, or a new file for a new study",
            kind="foreign",
        )


def quick_check(engine: Engine, url: str) -> None:
    """SQLite's ``PRAGMA quick_check``: a damaged page anywhere is the one-line error
    (before a run writes more into the file, or when `tuner check` looks)."""
    if engine.dialect.name != "sqlite":
        return
    from sqlalchemy import text

    try:
        with engine.connect() as conn:
            rows = [r[0] for r in conn.execute(text("PRAGMA quick_check(3)"))]
    except SQLAlchemyError as exc:
        raise database_error(url, exc) or StoreError(str(exc)) from exc
    if rows != ["ok"]:
        lines = [ln.strip() for r in rows for ln in str(r).splitlines()]
        said = [ln for ln in lines if ln and not ln.startswith("***")][:2]
        raise unusable("damaged", url, f"quick_check: {'; '.join(said) or 'not ok'}")


# --- opening to read ----------------------------------------------------------------------


def read_connector(path: Path) -> Callable[[], sqlite3.Connection]:
    """Connections to ``path`` that cannot write it and create nothing beside it."""
    absolute = quote(str(path.absolute()), safe="/")

    def connect() -> sqlite3.Connection:
        if not is_read_only(path):
            # The last connection to close removes the -wal and -shm files SQLite made.
            uri = f"file:{absolute}?mode=rw"
        elif Path(f"{path}-wal").exists():
            uri = f"file:{absolute}?mode=ro"  # a writer has it open: read its WAL too
        else:
            uri = f"file:{absolute}?mode=ro&immutable=1"  # nobody writes it: no lock files
        conn = sqlite3.connect(
            uri, uri=True, timeout=SQLITE_READ_TIMEOUT_S, check_same_thread=False
        )
        conn.execute("PRAGMA query_only=ON")
        return conn

    return connect


def read_engine(url: str) -> Engine:
    """An engine that only reads ``url``: a SQLite file must exist and is never written
    (see the module docstring); another database is opened as it is."""
    from tuner.storage.driver import missing_driver

    path = require_file(url)
    try:
        if path is None:
            return create_engine(url, pool_pre_ping=True)
        sniff(url)
        return create_engine(url, creator=read_connector(path))
    except ImportError as exc:
        raise missing_driver(url, exc) from exc
    except SQLAlchemyError as exc:
        raise database_error(url, exc) or StoreError(str(exc)) from exc


def read_rdb(url: str) -> Any:
    """optuna's storage over ``url``, to read only: nothing created, nothing written.

    A database without optuna's tables holds no study: StoreError listing what it is (an
    empty database, another program's).
    """
    import optuna

    from tuner.storage.driver import missing_driver

    engine = read_engine(url)
    try:
        found = tables(engine, url)
    finally:
        engine.dispose()
    refuse_foreign(found, url)
    if not found >= OPTUNA_TABLES:
        raise StoreError(f"{where(url)}: no study yet; run `tuner run --space FILE` first")
    path = sqlite_file(url)
    kwargs: dict[str, Any] = {} if path is None else {"creator": read_connector(path)}
    try:
        return optuna.storages.RDBStorage(url, engine_kwargs=kwargs, skip_table_creation=True)
    except ImportError as exc:
        raise missing_driver(url, exc) from exc
    except Exception as exc:  # optuna wraps SQLAlchemy's errors in its own
        raise database_error(url, exc) or StoreError(
            f"cannot read studies from {safe_url(url)}: {scrub_url(str(exc), url)}"
        ) from exc


def writable_file(url: str) -> None:
    """Before a command writes an existing SQLite file: refuse one that is not a
    database or is read-only (``is_read_only``), before SQLite is asked to write it."""
    path = sqlite_file(url)
    if path is None or not path.exists() or path.stat().st_size == 0:
        return
    sniff(url)
    if is_read_only(path):
        raise unusable("read_only", url, _mode(path))


def _mode(path: Path) -> str:
    """``mode r--r--r--`` of a file, for an error about its permissions."""
    try:
        return f"mode {stat.filemode(path.stat().st_mode)[1:]}"
    except OSError:
        return ""


def remove_sqlite_files(url: str) -> None:
    """Remove a SQLite database and its -wal, -shm and -journal files (one that a refused
    run created and left without a study)."""
    path = sqlite_file(url)
    if path is None:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def check_sound(url: str) -> None:
    """Read the whole database once (``quick_check``) without writing it: its one-line
    error for a damaged page, before a long-running reader (the dashboard) starts."""
    engine = read_engine(url)
    try:
        quick_check(engine, url)
    finally:
        engine.dispose()
