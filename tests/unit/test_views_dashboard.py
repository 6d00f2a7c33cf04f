"""`tuner dashboard`: optuna-dashboard on the storage, bound to 127.0.0.1, or a clear refusal."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tuner.errors import ConfigError
from tuner.views import dashboard


def test_without_optuna_dashboard_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dashboard.shutil, "which", lambda name: None)
    with pytest.raises(ConfigError, match=r"pip install 'tuner\[dashboard\]'"):
        dashboard.run_dashboard("sqlite:///x.db", 8080)


def test_the_dashboard_listens_on_localhost_only(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []

    def fake_run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[bytes]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(dashboard.shutil, "which", lambda name: f"/opt/bin/{name}")
    monkeypatch.setattr(dashboard.subprocess, "run", fake_run)
    dashboard.run_dashboard("sqlite:///x.db", 8123)
    assert ran == [
        ["/opt/bin/optuna-dashboard", "sqlite:///x.db", "--host", "127.0.0.1", "--port", "8123"]
    ]
