"""The vector retriever: the HNSW neighbours of the query's embedding, walked on the search's
second connection beside the lexical side where the search has one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from lectio.retrieval.modes import EMBEDDING_MODES
from lectio.retrieval.retriever import Declared, Proposals, Ranking
from lectio.retrieval.stage import Setting

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.request import VersionRequest


@dataclass(frozen=True)
class VectorSettings:
    weight: float = 1.0  # the HNSW list's weight in fusion
    # The vector side takes `candidates` rows from HNSW. ef_search 100 finds 95.5 % of the
    # exact top 100 (one query only 75 %), 400 finds 99.5 %. 200 was chosen on the dev parts of
    # all three query sets, where every metric stayed within noise of 400 (and of 150): the HNSW
    # walk is the longest step a hybrid search must wait for (benchmarks/search_latency.py).
    ef_search: int = 200
    expand: bool = False  # embed the query with its expansion words (ExpansionSettings)


class Vector(Declared):
    """The query's nearest chunks by cosine: paraphrase, what the words alone miss."""

    name: ClassVar[str] = "vector"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("vector", VectorSettings),)
    modes: ClassVar[frozenset[str]] = EMBEDDING_MODES
    beside: ClassVar[bool] = True


    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen=None) -> Ranking:
        return vector_candidates(request.conn, request.table_name, found.vector, found.where, found.params,
                                 request.config)


def vector_candidates(conn, table_name, vector, where, params, config: SearchConfig) -> Ranking:
    table = sql.Identifier(table_name)
    # pgvector accepts at most 1,000; past that the iterative scan below supplies the rest. Filters
    # apply after the HNSW scan; iterative scans keep going until enough rows pass. Both set in one
    # statement, for this transaction only.
    ef_search = min(max(config.vector.ef_search, config.candidates), 1000)
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                     (str(ef_search),))
        rows = conn.execute(
            sql.SQL("SELECT chunk_id, embedding <=> %(v)s AS distance FROM {table} WHERE {where} "
                    "ORDER BY embedding <=> %(v)s LIMIT %(limit)s").format(table=table, where=where),
            {"v": vector, **params, "limit": config.candidates},
            # Planned for each query: a plan psycopg's automatic preparation caches may have been
            # made without the HNSW index (it was seen to fall back to a 0.5 s exact scan).
            prepare=False,
        ).fetchall()
    # relaxed_order may return rows slightly out of order.
    return sorted(((chunk_id, 1 - distance) for chunk_id, distance in rows), key=lambda r: -r[1])
