"""`tuner dashboard`: the stored studies in optuna-dashboard, on 127.0.0.1 only.

The dashboard runs in this process (``optuna_dashboard.run_server``) rather than as the
``optuna-dashboard URL`` command: a storage URL with a password on a command line is
visible to every user of the machine (``ps``).
"""

from __future__ import annotations

from types import ModuleType

from tuner.errors import ConfigError


def _optuna_dashboard() -> ModuleType:
    try:
        import optuna_dashboard
    except ImportError:
        raise ConfigError(
            "optuna-dashboard is not installed: pip install 'tuner[dashboard]'"
        ) from None
    return optuna_dashboard


def run_dashboard(storage: str, port: int) -> None:
    """Run optuna-dashboard on ``storage`` until the user stops it (Ctrl-C)."""
    dashboard = _optuna_dashboard()
    print(f"optuna-dashboard on http://127.0.0.1:{port}/ (Ctrl-C to stop)", flush=True)
    dashboard.run_server(storage, host="127.0.0.1", port=port)
