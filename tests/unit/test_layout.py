"""The shape of the code: stage packages, imports that only run downhill, a domain free of Dagster,
modules that state their concern and are short enough to read, and functions that read as one step."""

from __future__ import annotations

import ast
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
LAYERS = ("lectio", "pipelines", "assets", "resources")
DAGSTER_LAYER = ("dagster", "pipelines", "assets", "resources")
# The domain's stage packages, lowest first: a package may import only those before it.
STAGES = ("settings", "sources", "alerts", "bible", "readers", "embedding", "rulesets", "quality",
          "index", "retrieval", "evaluation", "serving")
MAX_LINES = 500
# A function longer than this no longer reads as one step; functions defined inside it (a
# factory's assets, sensors or routes) count on their own, not towards it.
MAX_FUNCTION_LINES = 60
# Functions over MAX_FUNCTION_LINES left as they are, each with why.
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}  # "path::function": why it may be longer


def _modules() -> dict[str, Path]:
    found = {}
    for layer in LAYERS:
        for path in (PROJECT / layer).rglob("*.py"):
            parts = path.relative_to(PROJECT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Every project module `path` imports, at module level or inside a function."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in known or target.split(".")[0] in ("dagster",):
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, name, known) - {name} for name, path in modules.items()}


def _stage(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def test_the_domain_imports_nothing_from_dagster_or_its_layer():
    offenders = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items() if module.startswith("lectio")
        for target in targets if target.split(".")[0] in DAGSTER_LAYER
    )
    assert offenders == []


def test_there_are_no_import_circles():
    graph = _graph()
    # Tarjan-free check: a depth-first search that meets a module still on its path found a circle.
    state: dict[str, int] = {}
    circles = []

    def visit(module, path):
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append(path[path.index(target):] + [target] if target in path else [module, target])
            elif target in graph and target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(" → ".join(c) for c in circles)


def test_domain_stages_import_only_downhill():
    offenders = []
    for module, targets in _graph().items():
        if not module.startswith("lectio."):
            continue
        for target in targets:
            if not target.startswith("lectio.") or _stage(target) == _stage(module):
                continue
            if STAGES.index(_stage(target)) > STAGES.index(_stage(module)):
                offenders.append(f"{module} imports {target}")
    assert not offenders, "\n".join(sorted(offenders))


def test_every_domain_module_lives_in_a_stage_package():
    loose = [m for m in _graph() if m.startswith("lectio.") and _stage(m) not in STAGES]
    assert loose == []


def test_no_module_is_too_long_to_read():
    long = {str(p.relative_to(PROJECT)): n for p in _modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def _own_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's lines, less those of the functions and classes defined inside it."""

    def inner(node: ast.AST) -> list[ast.AST]:
        found = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append(child)
            else:
                found += inner(child)
        return found

    def span(node) -> int:
        return node.end_lineno - min([d.lineno for d in node.decorator_list] + [node.lineno]) + 1

    return span(function) - sum(span(child) for child in inner(function))


def test_every_function_reads_as_one_step():
    long = {}
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _own_lines(node) > MAX_FUNCTION_LINES:
                long[f"{path.relative_to(PROJECT)}::{node.name}"] = _own_lines(node)
    assert {name: n for name, n in long.items() if name not in LONG_FUNCTIONS_ALLOWED} == {}


def test_every_module_and_package_states_its_concern():
    """The first thing the next engineer reads of a module: what it is for."""
    missing = sorted(name for name, path in _modules().items() if not ast.get_docstring(ast.parse(path.read_text())))
    assert missing == []


def test_dagster_internals_are_taken_in_one_place():
    """Names from Dagster's private modules come through pipelines/dagster_internals.py only, so
    an upgrade that moves one is met in one file."""
    adapter = PROJECT / "pipelines" / "dagster_internals.py"
    private = []
    for path in _modules().values():
        if path == adapter:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            private += [f"{path.relative_to(PROJECT)}: {n}" for n in names if n.startswith("dagster._")]
    assert private == []
