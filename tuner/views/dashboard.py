"""`tuner dashboard`: the stored studies in optuna-dashboard, on 127.0.0.1 only."""

from __future__ import annotations

import shutil
import subprocess

from tuner.errors import ConfigError


def run_dashboard(storage: str, port: int) -> int:
    """Run optuna-dashboard on ``storage`` until the user stops it; its exit code."""
    exe = shutil.which("optuna-dashboard")
    if exe is None:
        raise ConfigError("optuna-dashboard is not installed: pip install 'tuner[dashboard]'")
    argv = [exe, storage, "--host", "127.0.0.1", "--port", str(port)]
    return subprocess.run(argv, check=False).returncode
