"""A storage URL whose database driver is not installed: one clear error, whatever opens it.

The driver is made missing by ``sys.modules["psycopg"] = None`` (``import psycopg`` then
raises ImportError), so the tests run where psycopg is installed too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tuner import cli, exit_codes
from tuner.errors import StoreError
from tuner.storage import Store
from tuner.storage.driver import require_driver
from tuner.study.run.optuna_rdb import open_rdb

PASSWORD = "s3cret-pw"
URL = f"postgresql+psycopg://alice:{PASSWORD}@127.0.0.1:1/tuner"
INSTALL = "pip install 'launch-tuner[postgres]'"


@pytest.fixture
def no_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)


def _says_how_to_install_psycopg(message: str) -> None:
    assert "driver psycopg" in message and "not installed" in message
    assert INSTALL in message
    assert "alice:***@127.0.0.1:1/tuner" in message
    assert PASSWORD not in message


@pytest.mark.usefixtures("no_psycopg")
@pytest.mark.parametrize("opener", [Store, open_rdb, require_driver])
def test_opening_a_url_without_its_driver_names_it_and_the_extra(opener: Any) -> None:
    with pytest.raises(StoreError) as caught:
        opener(URL)
    _says_how_to_install_psycopg(str(caught.value))


@pytest.mark.usefixtures("no_psycopg")
@pytest.mark.parametrize(
    "command",
    [
        ["run", "--space", "search_spaces/sim.yaml", "--trials", "1"],
        ["best"],  # no --study: optuna lists the studies first
        ["trials", "--study", "s"],
        ["cleanup"],
        ["dashboard"],
        ["bench", "--url", "http://127.0.0.1:1", "--record"],
    ],
    ids=lambda c: c[0],
)
def test_every_command_says_the_driver_is_missing(command: list[str], tmp_path: Path) -> None:
    if command[0] == "dashboard":
        pytest.importorskip("optuna_dashboard")
    if command[0] == "run":
        command = [*command, "--runs-dir", str(tmp_path / "runs")]
    done = CliRunner().invoke(cli.app, [*command, "--storage", URL], env={"COLUMNS": "400"})
    assert done.exit_code == exit_codes.ERROR, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert "No module named" not in done.output and "halted" not in done.output
    _says_how_to_install_psycopg(done.stderr.replace("\n", " "))


@pytest.mark.usefixtures("no_psycopg")
def test_a_url_without_a_driver_name_gets_sqlalchemys_default() -> None:
    # SQLAlchemy 2.1 reads postgresql:// as psycopg; 2.0 as psycopg2.
    with pytest.raises(StoreError, match="driver psycopg|driver psycopg2") as caught:
        Store(f"postgresql://alice:{PASSWORD}@127.0.0.1:1/tuner")
    assert INSTALL in str(caught.value) and PASSWORD not in str(caught.value)


def test_another_postgresql_driver_is_pointed_at_the_extras(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    with pytest.raises(StoreError) as caught:
        require_driver(f"postgresql+psycopg2://alice:{PASSWORD}@127.0.0.1:1/tuner")
    message = str(caught.value)
    assert "driver psycopg2 (postgresql) is not installed" in message
    assert (
        f"install psycopg2, or use the driver tuner's postgres extra installs: {INSTALL}" in message
    )
    assert "postgresql+psycopg://" in message and PASSWORD not in message


def test_an_installed_driver_and_an_unreadable_url_pass_the_check(tmp_path: Path) -> None:
    require_driver(f"sqlite:///{tmp_path}/t.db")
    require_driver("nosuchdialect://x")  # the engine's own error says what is wrong
    assert not (tmp_path / "t.db").exists()  # checking opens nothing
