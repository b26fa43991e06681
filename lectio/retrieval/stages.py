"""Running the ranking stages, from the fused ranking to the page.

The list is built once from a SearchConfig: only the stages of lectio.retrieval.pipeline it turns
on, for its mode, in PIPELINE's order; the search reads as many fused hits as the deepest of them
needs (lectio.retrieval.stage says what a stage is). With `stages.return_parents`, each child hit
first gives its place to its parent (parents_of). docs/search.md draws the pipeline."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from psycopg import sql

from lectio.retrieval.config import SearchConfig
from lectio.retrieval.hits import Hit, hits_by_id
from lectio.retrieval.pipeline import PIPELINE
from lectio.retrieval.signals import signals_of
from lectio.retrieval.stage import Context, Stage

if TYPE_CHECKING:
    from lectio.retrieval.request import VersionRequest


@lru_cache(maxsize=64)
def build(config: SearchConfig) -> tuple[Stage, ...]:
    """The stages `config` turns on for its mode, in PIPELINE's order (once per configuration)."""
    chosen = (kind.of(config) for kind in PIPELINE)
    return tuple(stage for stage in chosen if stage is not None and config.mode in stage.modes)


def pool_depth(stages: tuple[Stage, ...], k: int) -> int:
    """How many fused hits to read: as many as the deepest stage needs, and k at least."""
    return max((stage.depth(k) for stage in stages), default=k)


def run(stages: tuple[Stage, ...], hits: list[Hit], ctx: Context) -> list[Hit]:
    for stage in stages:
        hits = stage.apply(hits, ctx)
    return hits


def page(request: VersionRequest, ranked: list[tuple[str, float]], k: int | None = None) -> list[Hit]:
    """The first `k` (the request's by default) of the ranking, after the ranking stages."""
    conn, table_name, config, k = request.conn, request.table_name, request.config, k or request.k
    signals = signals_of(ranked)  # a parent's hit is no list's: the ranker reads none of them
    if config.stages.return_parents:
        ranked = parents_of(conn, table_name, ranked)
    pipeline = build(config)
    # Read as deep as the deepest stage looks: those that drop hits, move them back or choose
    # among them see more than k.
    hits = hits_by_id(conn, table_name, ranked[:pool_depth(pipeline, k)])
    return run(pipeline, hits, Context(conn, table_name, request.query, k, request.filters.given.kind,
                                        signals=signals))


def parents_of(conn, table_name, ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Retrieve the child, return the parent. A hit with a parent (a verse in its
    pericope) is replaced by the parent, and a parent reached twice is kept once, at its best rank.
    The parent is read under the same row-level rules as its child (same source, same ACL)."""
    parents = dict(
        conn.execute(
            sql.SQL("SELECT chunk_id, parent_id FROM {} WHERE chunk_id = ANY(%s) AND parent_id IS NOT NULL").format(
                sql.Identifier(table_name)),
            [[chunk_id for chunk_id, _ in ranked]],
        ).fetchall()
    )
    seen, collapsed = set(), []
    for chunk_id, score in ranked:
        chosen = parents.get(chunk_id, chunk_id)
        if chosen not in seen:
            seen.add(chosen)
            collapsed.append((chosen, score))
    return collapsed
