"""A study database that cannot be used is one error line on every command, and reading
creates nothing (issue 39, points 1 and 2).

The database is a small hand-made study (tests/unit/views_helpers.py), copied into a
plain file in WAL mode, as `tuner run` leaves it; then damaged in the middle, cut short,
replaced by text, made read-only, locked by another connection, or swapped for another
program's database. Every command is run through typer's CliRunner; optuna-dashboard is a
fake that returns at once. A read-only file is ``chmod 444``: tuner treats a file without
a write bit as read-only even as root (who could write it), so the test holds as root too,
and it checks that the file's bytes and mtime did not change.
"""

from __future__ import annotations

import gc
import hashlib
import os
import socket
import sqlite3
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy.exc
import yaml
from typer.testing import CliRunner

from tests.unit.views_helpers import BASELINE, SPACE, hand_study
from tuner import cli, exit_codes
from tuner.errors import StoreError, UnusableDatabaseError
from tuner.storage import health
from tuner.storage import store as store_module
from tuner.storage.schema import SCHEMA_VERSION
from tuner.storage.store import Store

runner = CliRunner()
FAST = ({"NCCL_PROTO": "LL"}, [85.0, 85.2, 85.1])
DAMAGED = ("corrupt", "truncated", "not_sqlite", "locked", "foreign")
# A command that did its job: `tuner best` on this study answers "not settled" (exit 5:
# FAST's one launch is +4.6%, never compared on fresh launches), the others exit 0.
DONE = (exit_codes.OK, exit_codes.NOT_SETTLED)
NOISE = ("Traceback", "[SQL:", "sqlalche.me", "StorageInternalError")


def _invoke(*args: str) -> Any:
    return runner.invoke(cli.app, list(args), env={"COLUMNS": "200"})


@pytest.fixture(autouse=True)
def _fake_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("optuna_dashboard")
    fake.run_server = lambda storage, **kw: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "optuna_dashboard", fake)
    monkeypatch.delenv("TUNER_DEBUG", raising=False)
    monkeypatch.delenv("TUNER_STORAGE", raising=False)


def _study_file(tmp_path: Path) -> Path:
    """A demo-like study database ``db/e.db`` (WAL mode, no -wal or -shm beside it) and
    its space file ``hand.yaml``."""
    (tmp_path / "made").mkdir()
    storage = hand_study(tmp_path / "made", [BASELINE, FAST])
    folder = tmp_path / "db"
    folder.mkdir()
    path = folder / "e.db"
    source = sqlite3.connect(storage.removeprefix("sqlite:///"))
    source.execute("VACUUM INTO ?", (str(path),))
    source.close()
    copy = sqlite3.connect(path)
    copy.execute("PRAGMA journal_mode=WAL")
    copy.close()
    (tmp_path / "hand.yaml").write_text(yaml.safe_dump(SPACE))
    return path


def _damage(path: Path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "corrupt":  # bytes overwritten in the middle, the header kept
        start, end = len(data) // 8, len(data) * 7 // 8
        path.write_bytes(data[:start] + b"\xa5" * (end - start) + data[end:])
    elif kind == "truncated":
        path.write_bytes(data[: len(data) // 3])
    elif kind == "not_sqlite":
        path.write_text("name,value\nthroughput,81.4\n")
    elif kind == "foreign":
        path.unlink()
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE photos (id INTEGER, path TEXT)")
        conn.commit()
        conn.close()


@pytest.fixture
def locked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Lock a database as another process would; waits for a lock are made short."""
    monkeypatch.setattr(health, "SQLITE_READ_TIMEOUT_S", 0.05)
    monkeypatch.setattr(store_module, "SQLITE_BUSY_TIMEOUT_S", 0.05)
    held: list[sqlite3.Connection] = []

    def lock(path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        held.append(conn)

    yield lock
    for conn in held:
        conn.rollback()
        conn.close()


def _commands(tmp_path: Path, url: str) -> dict[str, list[str]]:
    space = str(tmp_path / "hand.yaml")
    report = str(tmp_path / "out" / "report.html")
    return {
        "best": ["best", "--storage", url, "--study", "hand"],
        "best-resolving": ["best", "--storage", url],
        "trials": ["trials", "--storage", url, "--study", "hand"],
        "show": ["show", "0", "--storage", url, "--study", "hand"],
        "compare": ["compare", "1", "0", "--storage", url, "--study", "hand"],
        "compare-studies": ["compare-studies", "hand", "--storage", url],
        "report": ["report", "--storage", url, "--study", "hand", "--out", report],
        "dashboard": ["dashboard", "--storage", url],
        "check": ["check", "--space", space, "--storage", url],
        "run": ["run", "--space", space, "--storage", url, "--trials", "1"],
    }


COMMANDS = tuple(_commands(Path("."), "").keys())


def _one_error_line(done: Any, path: Path) -> str:
    """The one line that says it: ``Error: FILE: ...`` on stderr (``ERROR storage: FILE``
    among `tuner check`'s findings); never a traceback or SQL."""
    text = done.stdout + done.stderr
    for noise in NOISE:
        assert noise not in text, text
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    if not lines:
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("ERROR storage:")]
    assert len(lines) == 1, text
    assert str(path) in lines[0], lines[0]
    return lines[0]


FIX = {
    "corrupt": ("the database is damaged", ".recover"),
    "truncated": ("the database is damaged", ".recover"),
    "not_sqlite": ("not a SQLite database", "restore it from a backup"),
    "locked": ("another process holds a lock", "let it finish"),
    "foreign": ("not a study database", "pass the study's database with --storage"),
    "read_only": ("the database is read-only", "check the permissions"),
}


@pytest.mark.parametrize("kind", DAMAGED)
@pytest.mark.parametrize("command", COMMANDS)
def test_an_unusable_database_is_one_line_naming_the_file_and_the_fix(
    tmp_path: Path, kind: str, command: str, locked: Any
) -> None:
    path = _study_file(tmp_path)
    if kind == "locked":
        locked(path)
    else:
        _damage(path, kind)
    done = _invoke(*_commands(tmp_path, f"sqlite:///{path}")[command])
    line = _one_error_line(done, path)
    what, fix = FIX[kind]
    assert what in line and fix in line, line
    if command == "check":
        assert done.exit_code == exit_codes.CONFIG  # check's errors, among its findings
    else:
        assert done.exit_code == exit_codes.DATABASE == 4, done.stdout + done.stderr


def _fingerprint(path: Path) -> tuple[int, str]:
    return path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_read_only_database_is_read_and_never_written(tmp_path: Path, command: str) -> None:
    path = _study_file(tmp_path)
    path.chmod(0o444)  # read-only to tuner even when the tests run as root
    before = _fingerprint(path)
    done = _invoke(*_commands(tmp_path, f"sqlite:///{path}")[command])
    assert _fingerprint(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["e.db"]  # no -wal, no -shm
    if command in ("check", "run"):  # they would write: refused, with the fix
        line = _one_error_line(done, path)
        assert all(words in line for words in FIX["read_only"]), line
        assert done.exit_code == (exit_codes.CONFIG if command == "check" else 4)
        return
    assert done.exit_code in DONE, done.stdout + done.stderr
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr
    if command == "report":  # written whole; only the dashboard's link is missing
        assert "</html>" in (tmp_path / "out" / "report.html").read_text()
        assert "Note: not linked in `tuner dashboard`" in done.stderr


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in ("report", "run")])
def test_reading_a_writable_database_leaves_its_bytes_alone(tmp_path: Path, command: str) -> None:
    path = _study_file(tmp_path)
    before = _fingerprint(path)
    done = _invoke(*_commands(tmp_path, f"sqlite:///{path}")[command])
    assert done.exit_code in (*DONE, exit_codes.CONFIG), done.stdout + done.stderr
    assert _fingerprint(path) == before
    gc.collect()  # the command's connections close, as they do when its process exits
    assert sorted(p.name for p in path.parent.iterdir()) == ["e.db"]


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "run"])
def test_reading_in_an_empty_folder_creates_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    (tmp_path / "hand.yaml").write_text(yaml.safe_dump(SPACE))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = [a for a in _commands(tmp_path, "")[command] if a not in ("--storage", "")]
    done = _invoke(*args)
    assert list(work.iterdir()) == []
    if command == "check":
        assert "experiments.db does not exist yet: `tuner run` creates it" in done.stdout
    else:
        assert done.exit_code == exit_codes.ERROR
        assert "experiments.db: no such database; run `tuner run` here first" in done.stderr


def test_a_missing_study_names_the_studies_there(tmp_path: Path) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    optuna.create_study(storage=storage, study_name="other")  # not one tuner ran
    for args in (["best", "--study", "nosuch"], ["trials", "--study", "nosuch"]):
        done = _invoke(*args, "--storage", storage)
        assert done.exit_code == exit_codes.ERROR
        assert "no study named 'nosuch'; the studies there: hand, other" in done.stderr
    done = _invoke("compare-studies", "hand", "nosuch", "--storage", storage)
    assert "the studies there: hand, other" in done.stderr
    assert [s.study_name for s in optuna.get_all_study_summaries(storage)] == ["hand", "other"]


def test_a_database_without_optuna_tables_holds_no_study_and_stays_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    done = _invoke("best", "--study", "x", "--storage", f"sqlite:///{path}")
    assert done.exit_code == exit_codes.ERROR and "no study yet" in done.stderr
    assert path.stat().st_size == 0


def _taken_port_space(tmp_path: Path, port: int) -> Path:
    spec = {**SPACE, "study": "refused"}
    spec["server"] = {"command": [sys.executable, "-c", "pass", "{port}"], "port": port}
    path = tmp_path / "refused.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def test_a_run_refused_before_its_first_launch_leaves_no_study(
    tmp_path: Path, taken_port: int
) -> None:
    storage = hand_study(tmp_path, [BASELINE])
    space = _taken_port_space(tmp_path, taken_port)
    done = _invoke("run", "--space", str(space), "--storage", storage, "--trials", "1")
    assert done.exit_code == exit_codes.CONFIG, done.stdout + done.stderr
    assert "is already in use" in done.stderr
    assert [s.study_name for s in optuna.get_all_study_summaries(storage)] == ["hand"]
    assert Store(storage, read_only=True).study_names() == ["hand"]


def test_a_refused_first_run_leaves_no_database_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken_port: int
) -> None:
    space = _taken_port_space(tmp_path, taken_port)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    done = _invoke("run", "--space", str(space), "--trials", "1")
    assert done.exit_code == exit_codes.CONFIG, done.stdout + done.stderr
    assert not (work / "experiments.db").exists()
    done = _invoke("best")
    assert "no such database" in done.stderr  # not an empty study that says "see why"


def test_optunas_wrapped_error_is_read_down_to_sqlites_message() -> None:
    try:
        try:
            raise sqlalchemy.exc.DatabaseError(
                "SELECT 1", {}, sqlite3.DatabaseError("database disk image is malformed")
            )
        except sqlalchemy.exc.DatabaseError as inner:
            raise optuna.exceptions.StorageInternalError("invalid data in the commit") from inner
    except optuna.exceptions.StorageInternalError as outer:
        said = health.database_error("sqlite:///c.db", outer)
    assert isinstance(said, UnusableDatabaseError) and said.kind == "damaged"
    assert str(said).startswith("c.db: the database is damaged (database disk image is malformed)")
    assert "sqlite3 c.db .recover" in str(said) and "SELECT" not in str(said)
    other = health.database_error("sqlite:///c.db", sqlalchemy.exc.OperationalError("x", {}, None))
    assert type(other) is StoreError
    assert health.database_error("sqlite:///c.db", ValueError("not a database error")) is None


def test_tuner_debug_shows_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _study_file(tmp_path)
    _damage(path, "not_sqlite")
    monkeypatch.setenv("TUNER_DEBUG", "1")
    done = runner.invoke(cli.app, ["best", "--storage", f"sqlite:///{path}"])
    assert isinstance(done.exception, UnusableDatabaseError)
    assert os.environ["TUNER_DEBUG"] == "1"


def _back_to_version_3(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE tuner_launches DROP COLUMN fidelity")
    conn.execute("ALTER TABLE tuner_launches DROP COLUMN load_phases")
    conn.execute("UPDATE tuner_meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def test_reading_an_older_study_upgrades_it_unless_the_file_is_read_only(tmp_path: Path) -> None:
    path = _study_file(tmp_path)
    _back_to_version_3(path)
    path.chmod(0o444)
    before = _fingerprint(path)
    done = _invoke("best", "--storage", f"sqlite:///{path}")
    line = _one_error_line(done, path)
    assert "schema version 3, older than this tuner's" in line and "copy it" in line
    assert done.exit_code == exit_codes.DATABASE and _fingerprint(path) == before
    path.chmod(0o600)
    done = _invoke("best", "--storage", f"sqlite:///{path}")
    assert done.exit_code in DONE, done.stdout + done.stderr
    assert Store(f"sqlite:///{path}", read_only=True).schema_version_found == SCHEMA_VERSION
