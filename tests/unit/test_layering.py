"""The package layering of docs/architecture.md holds: no module imports from a layer above.

cli -> views, init, bench_command -> study -> trial, check, probe -> bench, launcher, telemetry,
storage -> space, stats, nccl, server_http, secrets, events -> errors,
exit_codes, vocabulary. Nothing outside tuner/sim
imports the simulator, except cli (`tuner sim` starts it). And no module imports one that
imports it back, directly or through others (an import cycle), whatever the import's place:
module level, inside a function, under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tuner

LAYER = {
    "cli": 6,
    "views": 5,
    "init": 5,
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


STUDY_TIER = {
    "attrs": 0,
    "effects": 1,
    "state": 1,
    "facts": 2,
    "policy": 3,
    "gate": 4,
    "suggest": 4,
    "run": 5,
}
"""tuner/study/'s tiers (docs/architecture.md): the names, the model of effects and the
typed state, the facts read from the store, the pure policy, the refusals before a
launch, and the run that joins, opens, optimizes and applies the policy's decisions."""
PURE_TIERS = ("attrs", "effects", "state", "policy", "gate")
"""Tiers that neither import optuna nor touch the store (facts read the store; run does both)."""


def test_the_study_tiers_import_only_the_tiers_below() -> None:
    study = ROOT / "study"
    tiers = {p.stem if p.is_file() else p.name for p in study.iterdir()} - {
        "__init__",
        "__pycache__",
    }
    assert tiers <= set(STUDY_TIER), f"give these a tier: {sorted(tiers - set(STUDY_TIER))}"
    wrong = []
    for path in study.rglob("*.py"):
        tier = path.relative_to(study).parts[0].removesuffix(".py")
        if tier == "__init__":
            continue
        for module in _imports(path):
            parts = module.split(".")
            if parts[:2] != ["tuner", "study"] or len(parts) < 3:
                continue
            other = parts[2]
            if other != tier and STUDY_TIER[other] >= STUDY_TIER[tier]:
                wrong.append(f"study/{path.relative_to(study)} imports {module}, not a tier below")
    assert wrong == []


def test_the_pure_tiers_import_neither_optuna_nor_the_store() -> None:
    wrong = []
    for tier in PURE_TIERS:
        found = ROOT / "study" / tier
        paths = sorted(found.rglob("*.py")) if found.is_dir() else [found.with_suffix(".py")]
        for path in paths:
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else []
                )
                for name in names:
                    if name.split(".")[0] == "optuna" or name.startswith("tuner.storage"):
                        wrong.append(f"study/{path.relative_to(ROOT / 'study')} imports {name}")
    assert wrong == []


def _module_name(path: Path, root: Path) -> str:
    """``tuner.space.spec`` for tuner/space/spec.py; a package's __init__ is the package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Every module of the package at ``root`` -> the package's modules it imports.

    Every import counts: at module level, inside a function, under TYPE_CHECKING.
    ``from tuner.x import y`` imports ``tuner.x.y`` when that is a module, else ``tuner.x``;
    ``import tuner.x.y`` imports ``tuner.x.y``; relative imports are resolved.
    """
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    found.add(sub if sub in paths else module)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    module = alias.name
                    while module not in paths and "." in module:
                        module = module.rpartition(".")[0]
                    found.add(module)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _one_cycle(graph: dict[str, set[str]], component: frozenset[str]) -> list[str]:
    """A shortest import chain from the component's first module back to it."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    for node in queue:
        for other in sorted(graph[node] & component):
            if other == start:
                return [*paths[node], start]
            if other not in paths:
                paths[other] = [*paths[node], other]
                queue.append(other)
    raise AssertionError(f"{sorted(component)} is not a cycle")


def _describe(graph: dict[str, set[str]], component: frozenset[str]) -> str:
    chain = " -> ".join(_one_cycle(graph, component))
    return f"import cycle among {', '.join(sorted(component))}: {chain}"


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = _import_graph(ROOT)
    cycles = _cycles(graph)
    for component in cycles:
        print(_describe(graph, component))
    wrong = [_describe(graph, c) for c in cycles]
    assert wrong == [], "\n".join(wrong)


def test_the_cycle_check_sees_imports_in_functions_and_under_type_checking(
    tmp_path: Path,
) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from pkg.sub import b\n",
        "sub/__init__.py": "",
        "sub/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.sub.c\n",
        "sub/c.py": "from ..a import f\n",
        "d.py": "import pkg.a\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    graph = _import_graph(root)
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert _cycles(graph) == [frozenset({"pkg.a", "pkg.sub.b", "pkg.sub.c"})]
    assert _one_cycle(graph, _cycles(graph)[0]) == ["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]
