"""lectio.retrieval has a public face, and callers outside the package import only from it: what
lies behind it (retrievers, fusion, stages, settings groups) can change without touching them."""

import ast
import importlib
from pathlib import Path

import lectio.retrieval as retrieval

PROJECT = Path(__file__).resolve().parents[3]
# The product's code outside the package (tests and benchmarks may reach behind the face).
CALLERS = ("lectio", "pipelines", "assets", "resources", "cli")
# Modules that may read one module behind the face, each with why.
ALLOWED = {
    # The learned ranker's out-of-fold verdict blends the trees' order with the fused order exactly
    # as the ranking stage does.
    ("lectio/training/ranker/trainer.py", "lectio.retrieval.learned_rank"),
}


def _behind_the_face(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lectio.retrieval."):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("lectio.retrieval.")]
    return found


def test_callers_import_only_from_the_public_face():
    offenders = sorted(
        f"{path.relative_to(PROJECT)} imports {module}"
        for folder in CALLERS for path in (PROJECT / folder).rglob("*.py")
        if "retrieval" not in path.relative_to(PROJECT).parts[:2]
        for module in _behind_the_face(path) if (str(path.relative_to(PROJECT)), module) not in ALLOWED)
    assert offenders == []


def test_every_public_name_is_there_and_each_is_what_it_names():
    for name in retrieval.__all__:
        assert getattr(retrieval, name) is not None, name
    assert callable(retrieval.search) and retrieval.SearchRequest.__name__ == "SearchRequest"
    # The search function, whichever module behind the face was imported first.
    importlib.import_module("lectio.retrieval.door")
    assert retrieval.search is importlib.import_module("lectio.retrieval.door").search
