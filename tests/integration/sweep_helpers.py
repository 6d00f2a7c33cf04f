"""Small space files against `tuner sim` for the sweep's integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

FAST_SIM = [
    "{python}",
    "-m",
    "tuner.sim",
    "--load-seconds",
    "0.2",
    "--time-scale",
    "0.1",
    "--host",
    "127.0.0.1",
    "--port",
    "{port}",
]


def write_space(tmp_path: Path, name: str = "fast", **overrides: Any) -> Path:
    """A space that runs a trial in about a second: fast sim, two short rounds, one level."""
    space: dict[str, Any] = {
        "study": name,
        "server": {"command": FAST_SIM, "startup_timeout_s": 30, "stop_timeout_s": 5},
        "params": {
            "NCCL_PROTO": {"env": "NCCL_PROTO", "choices": ["default", "LL", "Simple"]},
            "compilation": {"args": ["-O{value}"], "choices": ["default", 0, 3]},
        },
        "benchmark": {
            "prompt_tokens": 16,
            "max_tokens": 16,
            "concurrency": [1],
            "requests": 2,
            "warmup": 0,
            "rounds": 2,
        },
        "objective": {"metric": "output_throughput", "concurrency": 1},
        "stop": {"baseline_launches": 1, "patience": 20},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(space.get(key), dict):
            space[key] = {**space[key], **value}
        else:
            space[key] = value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def run_tuner(
    *args: str, cwd: Path, timeout: float = 150, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m tuner ARGS`` in ``cwd``: its output captured, a wide terminal (tables keep
    whole rows), and ``env`` added to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "tuner", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def tuner_in_process(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tuner ARGS`` through typer's CliRunner, in ``cwd``: what ``run_tuner`` returns,
    without a Python start-up (about 1.8 s a command). For the commands that only read a
    study (best, trials, show, report, compare-studies); a sweep runs in its own process."""
    from typer.testing import CliRunner

    from tuner import cli
    from tuner.cli import common

    # The CLI's consoles are made at import, with the COLUMNS of that moment (80 when some
    # earlier test of this worker imported tuner.cli): COLUMNS below does not reach them.
    common.out.width = common.err.width = 200
    here = Path.cwd()
    os.chdir(cwd)
    try:
        done = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200", **(env or {})})
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["tuner", *args], done.exit_code, done.stdout, done.stderr)
