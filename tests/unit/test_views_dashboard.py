"""`tuner dashboard`: optuna-dashboard on the storage, bound to 127.0.0.1, or a clear refusal."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.artifacts import FileSystemArtifactStore

from tuner.errors import ConfigError
from tuner.views import dashboard


def test_without_optuna_dashboard_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "optuna_dashboard", None)  # import fails
    with pytest.raises(ConfigError, match=r"pip install 'launch-tuner\[dashboard\]'"):
        dashboard.run_dashboard("sqlite:///x.db", 8080)


def test_the_dashboard_runs_in_process_on_localhost_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process: a storage URL's password never goes on a command line (ps)."""
    ran: list[tuple[Any, dict[str, Any]]] = []
    fake = types.ModuleType("optuna_dashboard")
    fake.run_server = lambda storage, **kw: ran.append((storage, kw))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "optuna_dashboard", fake)
    dashboard.run_dashboard("postgresql://u:hunter2@db/x", 8123)
    assert ran == [
        ("postgresql://u:hunter2@db/x", {"host": "127.0.0.1", "port": 8123, "artifact_store": None})
    ]


def test_the_artifact_folder_beside_the_database_is_served(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`tuner report` uploads the report there; the dashboard links to it."""
    ran: list[dict[str, Any]] = []
    fake = types.ModuleType("optuna_dashboard")
    fake.run_server = lambda storage, **kw: ran.append(kw)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "optuna_dashboard", fake)
    (tmp_path / "experiments-artifacts").mkdir()
    optuna.create_study(storage=f"sqlite:///{tmp_path}/experiments.db")  # it must be there
    dashboard.run_dashboard(f"sqlite:///{tmp_path}/experiments.db", 8123)
    store = ran[0]["artifact_store"]
    assert isinstance(store, FileSystemArtifactStore)
    assert Path(store._base_path) == tmp_path / "experiments-artifacts"
