"""BM25 candidates from a version's lexical mirror (lectio.index.mirror): every chunk that holds a
query word scored in this process, exactly as the SQL scoring scores it, and the best confirmed
under row-level security as the caller before any is returned.

The mirror holds every chunk, private ones too. It narrows to what the caller's principals and
filters allow before ranking (so deep private matches do not crowd out the list), but it only
proposes: the ids are read back on the caller's connection, as the reader role with the caller's
token and the search's WHERE clause, and whatever that read drops is replaced from further down
the ranking."""

from __future__ import annotations

from psycopg import sql

from lectio.index import mirror as mirrors
from lectio.retrieval.config import SearchConfig

# The first read confirms exactly the candidates wanted: the mirror has already applied the caller's
# ACL and filters, so the read drops nothing unless the two disagree (measured on the full index:
# 1.0 ms for 100 ids, 1.4-1.7 ms for 200). Each further read goes this many times deeper.
_DEEPER = 2

# The query's words and their weights, as the SQL scoring takes them (candidates._TERMS): a word
# of the query weighs 1, an expansion word `ew`, and a word in both counts once at the larger.
_WORDS = """
    SELECT lexeme, max(w) FROM (
        SELECT lexeme, 1.0::float8 AS w FROM unnest(to_tsvector('english', %(query)s))
        UNION ALL
        SELECT lexeme, %(ew)s::float8 FROM unnest(to_tsvector('english', %(extra)s))) t
    GROUP BY lexeme
"""


def candidates(conn, mirror: mirrors.Mirror | None, table_name: str, query: str, extra: str,
               conditions: list, where: sql.Composable, params: dict, config: SearchConfig,
               corpus: tuple[float, float]) -> list[tuple[str, float]] | None:
    """(chunk_id, BM25) best first, at most `config.candidates`, each read back under row-level
    security; None when there is no mirror or it cannot apply `conditions` (the caller scores in
    SQL). `conditions` are what `where` asks (lectio.retrieval.scope.Scope.conditions); `corpus`
    is BM25's N and mean document length, as the SQL scoring gets them."""
    eligible = mirror.mask(conditions) if mirror is not None else None
    if eligible is None:
        return None
    weights = dict(conn.execute(_WORDS, {"query": query, "extra": extra, "ew": config.expansion_weight}).fetchall())
    scores, held = mirror.scores(weights, config.bm25_k1, config.bm25_b, *corpus)
    return _confirmed(conn, mirror, table_name, scores, held & eligible, where, params, config.candidates)


def _confirmed(conn, mirror: mirrors.Mirror, table_name: str, scores, eligible, where, params,
               wanted: int) -> list[tuple[str, float]]:
    """The best `wanted` proposals that the caller's connection returns, in the mirror's order."""
    statement = sql.SQL("SELECT chunk_id FROM {} WHERE chunk_id = ANY(%(mirror_ids)s) AND {}").format(
        sql.Identifier(table_name), where)
    found: list[tuple[str, float]] = []
    checked, depth = 0, wanted
    while len(found) < wanted:
        ranked = mirrors.best(scores, eligible, depth)
        proposed = [mirror.chunk_ids[i] for i in ranked[checked:]]
        if not proposed:
            break
        visible = {chunk_id for (chunk_id,) in conn.execute(statement, {**params, "mirror_ids": proposed})}
        found += [(chunk_id, float(scores[i])) for chunk_id, i in zip(proposed, ranked[checked:])
                  if chunk_id in visible]
        if len(ranked) < depth:
            break  # every eligible chunk has been offered
        checked, depth = len(ranked), depth * _DEEPER
    return found[:wanted]
