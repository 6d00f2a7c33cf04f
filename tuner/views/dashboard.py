"""`tuner dashboard`: the stored studies in optuna-dashboard, on 127.0.0.1 only.

The dashboard runs in this process (``optuna_dashboard.run_server``) rather than as the
``optuna-dashboard URL`` command: a storage URL with a password on a command line is
visible to every user of the machine (``ps``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tuner.errors import ConfigError, TunerError


def _optuna_dashboard() -> ModuleType:
    try:
        import optuna_dashboard
    except ImportError:
        raise ConfigError(
            "optuna-dashboard is not installed: pip install 'launch-tuner[dashboard]'"
        ) from None
    return optuna_dashboard


def run_dashboard(storage: str, port: int, artifacts: Path | None = None) -> int:
    """Run optuna-dashboard on ``storage`` until the user stops it (Ctrl-C); its exit code.

    In this process rather than as a command, so that the storage URL (and a password in
    it) never sits on a command line other users can read with ``ps``. The artifact
    folder (``artifacts``, else the storage's: tuner/views/report.artifact_dir) is served
    too, so the dashboard links to the HTML report `tuner report` uploaded. A server that
    cannot start (the port is taken) is an error, exit 1.

    The database must be there and readable first (tuner/storage/health.py): a missing
    file is an error, not a new empty database, and a damaged, locked or foreign one is
    its one-line error before the server starts. A read-only file is served read only.
    Another database (PostgreSQL) is optuna-dashboard's to open.
    """
    dashboard = _optuna_dashboard()
    from optuna.artifacts import FileSystemArtifactStore

    from tuner.secrets import sqlite_file
    from tuner.storage import health
    from tuner.storage.driver import require_driver
    from tuner.views.report import artifact_dir

    require_driver(storage)  # optuna-dashboard would fail on it with a traceback
    served: object = storage
    path = sqlite_file(storage)
    if path is not None:
        rdb = health.read_rdb(storage)  # there, a study database: or its one-line error
        health.check_sound(storage)  # no damaged page: or its one-line error
        if health.is_read_only(path):
            served = rdb

    folder = artifacts or artifact_dir(storage)
    store = FileSystemArtifactStore(str(folder)) if folder.is_dir() else None
    print(f"optuna-dashboard on http://127.0.0.1:{port}/ (Ctrl-C to stop)", flush=True)
    if store is None:
        print(f"no artifact folder at {folder}: run `tuner report` to add the report", flush=True)
    try:
        dashboard.run_server(served, host="127.0.0.1", port=port, artifact_store=store)
    except OSError as exc:
        raise TunerError(f"optuna-dashboard could not start on 127.0.0.1:{port}: {exc}") from exc
    return 0
