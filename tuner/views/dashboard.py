"""`tuner dashboard`: the stored studies in optuna-dashboard, on 127.0.0.1 only."""

from __future__ import annotations

import shutil
import subprocess

from tuner.errors import ConfigError


def run_dashboard(storage: str, port: int) -> None:
    """Run optuna-dashboard on ``storage`` until the user stops it."""
    exe = shutil.which("optuna-dashboard")
    if exe is None:
        raise ConfigError("optuna-dashboard is not installed: pip install 'tuner[dashboard]'")
    subprocess.run([exe, storage, "--host", "127.0.0.1", "--port", str(port)], check=False)
