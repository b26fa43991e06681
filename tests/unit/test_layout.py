"""The shape of the code: stage packages, imports that only run downhill, a domain free of Dagster,
Dagster's internals taken in one place, project modules under their own names, modules that state their concern,
functions that read as one step and take few enough arguments to call, and the integration tests
in a folder per concern."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
LAYERS = ("lectio", "pipelines", "assets", "resources", "cli")
DAGSTER_LAYER = ("dagster", "pipelines", "assets", "resources", "cli")
# The domain's stage packages, lowest first: a package may import only those before it.
STAGES = ("settings", "sources", "alerts", "bible", "readers", "embedding", "rulesets", "quality",
          "index", "registry", "reranker", "ranker", "retrieval", "evaluation", "training", "serving")
# Every folder of the project's own Python: the rules on imports and parameters hold in all of it.
PYTHON_FOLDERS = LAYERS + ("benchmarks", "tests")
# A function longer than this no longer reads as one step; functions defined inside it (a
# factory's assets, sensors or routes) count on their own, not towards it.
MAX_FUNCTION_LINES = 60
# Functions over MAX_FUNCTION_LINES left as they are, each with why.
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}  # "path::function": why it may be longer
# More arguments than this and a call no longer reads: group them in an object the caller has.
MAX_PARAMETERS = 7
# Dagster's private names: lectio's own code takes them here, the tests in their own file, so no
# lectio process imports what only a test needs.
DAGSTER_ADAPTERS = {PROJECT / "pipelines" / "dagster_internals.py": "pipelines",
                    PROJECT / "tests" / "dagster_internals.py": "tests"}
# The Dagster layer, lowest first: a layer imports only those before it (and the domain). The
# `lectio` command sits on top: its Dagster commands run pipelines, nothing imports it.
DAGSTER_LAYERS = ("resources", "assets", "pipelines", "cli")
# The command's package: Dagster and its layer are imported by the commands that run Dagster, inside
# them, so `lectio search`, `serve`, `eval`, `index` and `token` start without them.
CLI = PROJECT / "cli"
# Where the code location's sensors and schedules are declared: a module per sensor, named after
# it, in the sensors package; the schedule in its own module.
SENSORS = PROJECT / "pipelines" / "sensors"
SCHEDULES = PROJECT / "pipelines" / "schedules.py"
SENSOR_DECORATORS = {"sensor", "run_failure_sensor", "run_status_sensor", "asset_sensor", "multi_asset_sensor"}
SCHEDULE_DECORATORS = {"schedule"}
# Every asset is declared under assets/, the migration's too.
ASSETS = PROJECT / "assets"
ASSET_DECORATORS = {"asset", "multi_asset", "graph_asset", "graph_multi_asset", "observable_source_asset",
                    "multi_observable_source_asset"}
# The integration tests, a folder per concern, each with what belongs in it; none in tests/integration
# itself. No __init__.py: pytest's default (prepend) import mode imports a test module by its file
# name, so a file name is used once across tests/.
INTEGRATION = PROJECT / "tests" / "integration"
INTEGRATION_CONCERNS = {
    "trust": "what an attacker or a bad input tried: row-level security, ACLs, tokens, refusals, forged or long tags, bad ids",
    "ui": "what Dagster's UI shows and launches: its path, asset, check and sensor pages, the runs list, the console",
    "deployment": "where lectio runs: the embedded or an external server, docker-compose's roles and processes, "
                  "connections, memory, a full disk",
    "retrieval": "what a search answers: retrievers, fusion, expansion, the lexical mirror, query forms and sets, the service",
    "pipeline": "ingest to index: readers on the real modules, runs, reruns, batches, sensors, alerts, quality, "
                "migration, versions",
    "models": "the embedder's backends and runtimes, the home's model and its gate, training, the reranker and learned ranker",
}


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for layer in LAYERS for path in (PROJECT / layer).rglob("*.py")}


def _python_files() -> list[Path]:
    return sorted(path for folder in PYTHON_FOLDERS for path in (PROJECT / folder).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_nodes(path: Path, runtime_only: bool = False):
    """Each import in `path` (at module level or inside a function), with the module it reads
    from, relative imports resolved: (node, base), base "" for a plain `import`. With
    `runtime_only`, not those under `if TYPE_CHECKING:`, which name a type for annotations and
    never run."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    annotations_only = {id(inner) for node in ast.walk(tree) if runtime_only and _type_checking(node)
                        for block in node.body for inner in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in annotations_only:
            continue
        if isinstance(node, ast.Import):
            yield node, ""
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            yield node, base


def _type_checking(node) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(path: Path, known: set[str], runtime_only: bool = False) -> set[str]:
    """Every project module `path` imports, at module level or inside a function (only those that
    run, with `runtime_only`)."""
    out = set()
    for node, base in _import_nodes(path, runtime_only):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            if target in known or target.split(".")[0] in ("dagster",):
                out.add(target)
    return out


def _graph(runtime_only: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, known, runtime_only) - {name} for name, path in modules.items()}


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
    # Of the imports that run: a retriever names the search settings in its annotations while the
    # settings gather every retriever's own (lectio.retrieval.retrievers), as a stage's do.
    graph = _graph(runtime_only=True)
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
    """Names from Dagster's private modules come through pipelines/dagster_internals.py only (the
    tests', through tests/dagster_internals.py), so an upgrade that moves one is met in one file
    for each, and only the tests import the test half."""
    private = []
    for path in _python_files():
        if path in DAGSTER_ADAPTERS:
            continue
        for node, base in _import_nodes(path):
            # Each name in full, so `from dagster import _core` counts as well.
            names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
            private += [f"{path.relative_to(PROJECT)}: {n}" for n in names if n.startswith("dagster._")]
    assert private == []


def test_a_project_module_is_imported_under_its_own_name():
    """`registry as ingest` makes a reader learn a second name for a module; third-party
    conventions (`numpy as np`) are not the project's to change."""
    known = set(_modules())
    renamed = []
    for path in _python_files():
        for node, base in _import_nodes(path):
            for alias in node.names:
                module = f"{base}.{alias.name}" if base else alias.name
                if alias.asname and alias.asname != alias.name.rpartition(".")[2] and module in known:
                    renamed.append(f"{path.relative_to(PROJECT)}: {module} as {alias.asname}")
    assert renamed == []


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Its positional and keyword-only parameters, less the self or cls a method is handed."""
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def test_every_function_takes_few_enough_arguments_to_call():
    """Functions defined inside others (a factory's assets, a test's helpers) count too."""
    many = {}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(_parameters(node)) > MAX_PARAMETERS:
                many[f"{path.relative_to(PROJECT)}::{node.name}"] = len(_parameters(node))
    assert many == {}


def test_the_dagster_layer_imports_only_downhill():
    """Resources, then assets, then the jobs, sensors and definitions that gather them, then the
    command: assets never import pipelines, nor pipelines the command, so the layer has no loop."""
    graph = _graph()
    uphill = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items() if module.split(".")[0] in DAGSTER_LAYERS
        for target in targets if target.split(".")[0] in DAGSTER_LAYERS
        and DAGSTER_LAYERS.index(target.split(".")[0]) > DAGSTER_LAYERS.index(module.split(".")[0]))
    assert uphill == []


def test_only_the_tests_import_the_tests_dagster_internals():
    users = sorted(str(path.relative_to(PROJECT)) for path in _python_files()
                   if path.parts[len(PROJECT.parts)] != "tests"
                   and any(base == "tests.dagster_internals" or "tests.dagster_internals" in
                           [f"{base}.{a.name}" for a in node.names] for node, base in _import_nodes(path)))
    assert users == []


# Where the domain may read the environment besides lectio/settings.py, each with why: the
# service's supervisor hands its worker processes their pool and shared state through it.
ENVIRONMENT_READERS = {"lectio/serving/app.py": "the supervisor's word to its workers"}


def test_the_domain_reads_its_settings_in_one_place():
    """A user's setting is read from the environment by lectio/settings.py alone (setting a
    library's own variable, such as HF_HUB_OFFLINE, is not reading one)."""
    readers = []
    for path in sorted((PROJECT / "lectio").rglob("*.py")):
        where = str(path.relative_to(PROJECT))
        if where == "lectio/settings.py" or where in ENVIRONMENT_READERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if called and ast.unparse(node.func) in ("os.environ.get", "os.getenv"):
                readers.append(f"{where}:{node.lineno}")
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" \
                    and isinstance(node.ctx, ast.Load):
                readers.append(f"{where}:{node.lineno}")
    assert readers == []


# Where a search's mode may be compared with one of the modes, each with why: the rest ask the
# configuration (SearchConfig.hybrid, embeds, matches_words) or a stage's declared modes.
MODE_DECLARERS = {"lectio/retrieval/config.py": "SearchConfig's properties declare what a mode runs"}


def test_modes_are_declared_once_never_compared_inline():
    inline = []
    for path in sorted((PROJECT / "lectio").rglob("*.py")):
        where = str(path.relative_to(PROJECT))
        if where in MODE_DECLARERS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Attribute) and ast.unparse(side.value) == "Mode"
                    for side in (node.left, *node.comparators)):
                inline.append(f"{where}:{node.lineno}")
    assert inline == []


def _declared(path: Path, decorators: set[str]) -> list[tuple[str, str | None]]:
    """The functions in `path` made definitions by one of `decorators`, each with the `name=` its
    decorator gives where that is a literal: (function, name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            called = decorator.func if isinstance(decorator, ast.Call) else decorator
            if ast.unparse(called).rpartition(".")[2] in decorators:
                named = [k.value.value for k in getattr(decorator, "keywords", [])
                         if k.arg == "name" and isinstance(k.value, ast.Constant)]
                found.append((node.name, named[0] if named else None))
    return found


def test_each_sensor_has_a_module_of_its_own_named_after_it():
    """pipelines/sensors/NAME.py declares the sensor NAME and no other; no module elsewhere declares one."""
    misplaced = []
    for path in _modules().values():
        declared = _declared(path, SENSOR_DECORATORS)
        where = str(path.relative_to(PROJECT))
        if path.parent != SENSORS:
            misplaced += [f"{where}: {function}" for function, _ in declared]
        elif len(declared) > 1 or any(function != path.stem or name not in (None, path.stem)
                                      for function, name in declared):
            misplaced.append(f"{where}: {declared}")
    assert misplaced == []


def test_the_schedules_are_declared_in_their_own_module():
    elsewhere = sorted(f"{path.relative_to(PROJECT)}: {function}" for path in _modules().values()
                       if path != SCHEDULES for function, _ in _declared(path, SCHEDULE_DECORATORS))
    assert elsewhere == [] and _declared(SCHEDULES, SCHEDULE_DECORATORS)


def test_the_command_imports_dagster_only_in_the_commands_that_run_it():
    eager = []
    for path in sorted(CLI.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            eager += [f"{path.relative_to(PROJECT)}: {name}" for name in names
                      if name.split(".")[0] in set(DAGSTER_LAYER) - {"cli"}]
    assert eager == []


def test_every_asset_is_declared_under_assets():
    elsewhere = sorted(f"{path.relative_to(PROJECT)}: {function}" for path in _modules().values()
                       if ASSETS not in path.parents for function, _ in _declared(path, ASSET_DECORATORS))
    assert elsewhere == []


def test_the_integration_tests_sit_in_a_folder_per_concern():
    loose = sorted(path.name for path in INTEGRATION.glob("*.py"))
    folders = sorted(path.name for path in INTEGRATION.iterdir() if path.is_dir() and not path.name.startswith(("_", ".")))
    deeper = sorted(str(path.relative_to(INTEGRATION)) for path in INTEGRATION.rglob("*.py")
                    if path.parent.parent != INTEGRATION)
    empty = [folder for folder in INTEGRATION_CONCERNS if not list((INTEGRATION / folder).glob("test_*.py"))]
    assert (loose, deeper, empty) == ([], [], [])
    assert folders == sorted(INTEGRATION_CONCERNS)


def test_a_test_module_name_is_used_once_across_the_tests():
    """No __init__.py under tests/: two test modules of one file name could not both be imported."""
    names = Counter(path.name for path in (PROJECT / "tests").rglob("test_*.py"))
    assert sorted(name for name, count in names.items() if count > 1) == []
