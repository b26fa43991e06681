"""From an index version to a trained reranker or adapted embedder: the pairs (made or read back),
the training (made or found by its id), then, for the reranker, the gate that lets it into the
live version's searches or not. What `lectio model train`, `lectio model adapt` and the Dagster
assets all run, so each ends in the same state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from lectio.embedding.model import Embedder
from lectio.index import versions
from lectio.reranker.model import precision
from lectio.sources import load_sources
from lectio.training import store
from lectio.training.embedder import adaptation
from lectio.training.loop import with_steps
from lectio.training.pairs import Pair
from lectio.training.reranker import trainer
from lectio.training.guard import QUERY_SETS, Guard, evaluation_sources

# The sets a reranker is gated on, each by its dev part: every set the project keeps.
GATE_QUERY_SETS = QUERY_SETS


def guard_for(sources_file: Path) -> Guard:
    """The guard over the committed query sets and the entries of `sources_file` that bring
    evaluation-only data."""
    return Guard.of_query_sets(excluded_sources=evaluation_sources(load_sources(sources_file)))


def pairs_for(conn, home: Path, sources_file: Path, version: str | None = None):
    """(pairs, their file, made now) for `version`, the live one by default."""
    version = version or versions.live_version(conn)
    if version is None:
        raise ValueError("no live index yet: run `lectio run` first")
    info = versions.get_version(conn, version)
    embed = Embedder.for_queries_of(info.model_id).encode
    return store.pairs_of(conn, home, version, embed, guard_for(sources_file))


def recipe(steps: int | None = None, layers: int | None = None) -> trainer.Recipe:
    chosen = _steps(trainer.Recipe(), steps)
    if layers is not None:
        if not 1 <= layers <= 6:
            raise ValueError(f"--layers must be between 1 and 6 (MiniLM has six), not {layers}")
        chosen = replace(chosen, layers=layers)
    return chosen


def _steps(chosen, steps: int | None):
    """A learner's recipe cut to the `--steps` asked for, where one was."""
    if steps is None:
        return chosen
    if steps < 1:
        raise ValueError(f"--steps must be at least 1, not {steps}")
    return with_steps(chosen, steps)


def train(made: list[Pair], home: Path, chosen: trainer.Recipe,
          progress: Callable[[int, int, float], None] | None = None) -> dict:
    return trainer.train(made, home, chosen, precision(home), progress)


def gate_sets(paths: Sequence[str | Path] | None = None, part: str = "dev") -> dict:
    """The query sets a reranker's gate scores, by name: `paths` (every set in GATE_QUERY_SETS by
    default), each cut to `part` (dev by default: defaults are chosen on it)."""
    from lectio.evaluation.migration_gate import load_query_sets
    from lectio.evaluation.querysets import select_part

    sets = load_query_sets(paths or sorted(GATE_QUERY_SETS.glob("*.jsonl")))
    return {name: select_part(queries, part) for name, queries in sets.items()}


def gate_reranker(conn, home: Path, model_id: str | None, sets: dict | None = None, force: bool = False):
    """Let `model_id` (None: none) into the live version's searches, or refuse, as the gate decides
    on `sets` (gate_sets() by default)."""
    from lectio.training.reranker.gate import gate

    return gate(conn, home, model_id, gate_sets() if sets is None else sets, force=force)


def adapt_recipe(steps: int | None = None) -> adaptation.Recipe:
    return _steps(adaptation.Recipe(), steps)


def adapt(made: list[Pair], home: Path, chosen: adaptation.Recipe,
          progress: Callable[[int, int, float], None] | None = None) -> dict:
    """The embedder adapted on `made` (trained, or found by its id), exported to ONNX and checked
    against its torch weights where ONNX Runtime is installed, as the packaged model is."""
    from lectio.embedding import onnx_runtime
    from lectio.embedding.packaged import ADAPTED_RELEASE

    record = adaptation.train(made, home, chosen, precision(home), progress)
    if onnx_runtime.available():
        onnx_runtime.ensure_export(record["id"], ADAPTED_RELEASE, "fp32", home)
    return record
