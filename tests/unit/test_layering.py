"""The package layering of docs/architecture.md holds: no module imports from a layer above.

cli -> views, bench_command -> study -> trial, check, probe -> bench, launcher, telemetry,
storage -> space, stats, nccl, server_http, secrets, events -> errors,
exit_codes, vocabulary. Nothing outside tuner/sim
imports the simulator, except cli (`tuner sim` starts it).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tuner

LAYER = {
    "cli": 6,
    "views": 5,
    "report": 5,
    "bench_command": 5,
    "study": 4,
    "trial": 3,
    "check": 3,
    "probe": 3,
    "bench": 2,
    "launcher": 2,
    "telemetry": 2,
    "storage": 2,
    "sim": 2,
    "space": 1,
    "stats": 1,
    "nccl": 1,
    "server_http": 1,
    "secrets": 1,
    "events": 1,
    "errors": 0,
    "exit_codes": 0,
    "vocabulary": 0,
}
ROOT = Path(tuner.__file__).parent


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "tuner":
                found += [f"tuner.{alias.name}" for alias in node.names]
            elif node.module.startswith("tuner."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("tuner.")]
    return found


def test_every_top_level_module_has_a_layer() -> None:
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file()}
    tops = {p.stem for p in ROOT.glob("*.py")} | packages
    tops -= {"__init__", "__main__"}
    assert tops <= set(LAYER), f"give these a layer: {sorted(tops - set(LAYER))}"


def test_no_module_imports_from_a_layer_above_or_the_simulator() -> None:
    wrong = []
    for path in ROOT.rglob("*.py"):
        top = path.relative_to(ROOT).parts[0].removesuffix(".py")
        if top in ("__init__", "__main__"):
            continue
        for module in _imports(path):
            other = module.split(".")[1]
            if other == top:
                continue
            if other == "sim" and top != "cli":
                wrong.append(f"{path.relative_to(ROOT)} imports the simulator ({module})")
            elif LAYER[other] > LAYER[top]:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}, a layer above")
    assert wrong == []
