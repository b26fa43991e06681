"""The cross-reference retriever: verses the corpus links to the passages of the fused order's
best hits, within `depth` steps, ranked by their similarity to the query plus a boost for the
link. It reads the fused order, and the search fuses again with its list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from lectio.index import xrefs
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.retriever import FUSED, Declared, Proposals, Ranking
from lectio.retrieval.stage import Setting

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.request import VersionRequest


@dataclass(frozen=True)
class XrefSettings:
    """Cross-reference expansion: verses the corpus links to the best hits' passages, within
    `depth` steps, ranked by their similarity to the query plus a boost for the link."""

    # Off by default: on the theology set it left recall@20 where it was (.615 → .614 at weight
    # 0.3, .616 at 1.0) and cost precision@5 (.394 → .377, .343); docs/results.md has the runs.
    weight: float = 0.0
    seeds: int = 10  # best fused hits whose verses seed the traversal
    depth: int = 2
    boost: float = 0.15
    max_linked: int = 200


class Xrefs(Declared):
    """Verses linked to the best hits' passages (off by default)."""

    name: ClassVar[str] = "xrefs"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("xrefs", XrefSettings),)
    modes: ClassVar[frozenset[str]] = HYBRID_ONLY
    reads: ClassVar[str] = FUSED


    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen: Ranking | None = None) -> Ranking | None:
        if not seen:
            return None
        return xref_candidates(request.conn, request.table_name, seen[: request.config.xrefs.seeds], found.vector,
                               (found.where, found.params), request.config, request.layout) or None


def xref_candidates(conn, table_name, seeds, vector, rows: tuple[sql.Composable, dict], config: SearchConfig,
                    layout: int | None = None):
    """Verses linked to the best hits' passages, best first by similarity to the query plus a
    boost for the link (halved at depth 2): a linked verse that is also close to the query ranks
    above one that is only one of the two. `rows` is the search's WHERE clause and its parameters
    (lectio.retrieval.scope.Scope.where)."""
    table, (where, params) = sql.Identifier(table_name), rows
    seed_refs = conn.execute(
        sql.SQL("SELECT refs FROM {} WHERE chunk_id = ANY(%s) AND cardinality(refs) <= %s").format(table),
        [[chunk_id for chunk_id, _ in seeds], xrefs.MAX_LINKED_VERSES],
    ).fetchall()
    refs = [ref for (row_refs,) in seed_refs for ref in row_refs]
    if layout is None and not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [xrefs.table_name(table_name)]).fetchone()[0]:
        return []  # a version built before the graph existed (index layout < 4)
    found = xrefs.linked(conn, table_name, refs, config.xrefs.depth) if refs else {}
    if not found:
        return []
    # Two steps from ten passages can reach thousands of verses; the nearest and most often
    # cited are kept, which bounds the cost of scoring them.
    nearest = sorted(found.items(), key=lambda item: (item[1][0], -item[1][1]))[: config.xrefs.max_linked]
    found = dict(nearest)
    rows = conn.execute(
        sql.SQL("SELECT chunk_id, refs[1], 1 - (embedding <=> %(v)s) FROM {table} "
                "WHERE granularity = 'verse' AND refs && %(linked)s AND {where}").format(table=table, where=where),
        {"v": vector, "linked": list(found), **params},
    ).fetchall()
    scored = [(chunk_id, similarity + config.xrefs.boost / found[ref][0]) for chunk_id, ref, similarity in rows]
    return sorted(scored, key=lambda r: -r[1])[: config.candidates]
