"""The space's probe: its program exists, its sizes can be known here, torch for ours.

A probe that cannot run is a warning, not an error: the sweep then turns the probe off
with one message and runs as without it (docs/probe.md). The probe itself is not run
here (a torch probe takes seconds): `tuner probe allreduce` runs it by hand.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from tuner.check.command import is_python, module_exists, python_module
from tuner.check.report import Findings
from tuner.errors import ConfigError
from tuner.probe.model_config import probe_model_config
from tuner.probe.run import probe_argv
from tuner.probe.sizes import ProbePlanError, probe_plan
from tuner.space import model_limits
from tuner.space.spec import Space


def check_probe(space: Space, found: Findings) -> None:
    """Warnings for a probe that would be off in the sweep; one ok line when it is fine."""
    probe = space.spec.probe
    if probe is None:
        return
    try:
        config = probe_model_config(space)
    except ConfigError as exc:
        found.add("warning", "probe.config_json", f"{exc}; the ceiling cannot be computed")
        config = model_limits.load_model_config(space)
    try:
        plan = probe_plan(probe, space.spec.benchmark, config)
    except ProbePlanError as exc:
        found.add("warning", "probe.sizes", f"{exc}; until then the sweep runs without it")
        return
    argv = probe_argv(probe, plan.sizes, model_limits.inspect_names(space))
    problem = _cannot_run(argv)
    if problem:
        found.add("warning", "probe.command", f"{problem}; the sweep would run without the probe")
        return
    levels = ", ".join(f"{s} bytes at concurrency {c}" for c, s in plan.by_level.items())
    found.add(
        "ok",
        "probe",
        f"{' '.join(argv[:5])} ...: {levels} ({plan.source}); "
        f"{plan.allreduces_per_token} all-reduces per token",
    )


def _cannot_run(argv: list[str]) -> str | None:
    exe = argv[0]
    path = exe if os.sep in exe else shutil.which(exe)
    if path is None or not os.access(path, os.X_OK) or not Path(path).is_file():
        return f"{exe!r} is not an executable on PATH"
    module = python_module(argv)
    if module is None or not (is_python(exe) and os.path.abspath(path) == sys.executable):
        return None
    if not module_exists(module):
        return f"module {module!r} is not installed in {sys.executable}"
    ours = module == "tuner" and argv[3:5] == ["probe", "allreduce"]
    if ours and importlib.util.find_spec("torch") is None:
        return "torch is not installed, which `tuner probe allreduce` needs (pip install torch)"
    return None
