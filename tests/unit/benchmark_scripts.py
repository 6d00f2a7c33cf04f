"""Load a script of benchmarks/ as a module, for the unit tests of its own logic."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(script: str, name: str | None = None) -> types.ModuleType:
    """benchmarks/<script> as a fresh module (``name``: its module name, default the
    script's stem + "_unit"), registered while it runs: dataclasses look their module up
    by name."""
    module_name = name or f"{Path(script).stem}_unit"
    spec = importlib.util.spec_from_file_location(module_name, BENCHMARKS / script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[module_name]
    return module
