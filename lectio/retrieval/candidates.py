"""The retrievers a ranked search fuses, each a list of (chunk_id, score) best first, and their
fusion: HNSW vectors, BM25 over the version's full text, pericope titles, the cross-reference
graph, and the citation prior that lifts what the corpus's commentators cite often. Each reads
through the caller's connection, so row-level security applies to every one."""

from __future__ import annotations

import math

from psycopg import sql

from lectio.index import citations as prominence
from lectio.index import store
from lectio.index import xrefs
from lectio.retrieval.config import SearchConfig


def weigh_prominence(conn, table_name, fused: list[tuple[str, float]], weight: float) -> list[tuple[str, float]]:
    cited = prominence.most_cited(conn, table_name, [chunk_id for chunk_id, _ in fused])
    weighed = [(chunk_id, score * (1 + weight * math.log1p(cited.get(chunk_id, 0)))) for chunk_id, score in fused]
    return sorted(weighed, key=lambda item: -item[1])


def fuse(lists: list[tuple[float, list[tuple[str, float]]]], rrf_k: int) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for weight, ranked in lists:
        for rank, (chunk_id, _) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def xref_candidates(conn, table_name, seeds, vector, where, params, config: SearchConfig):
    """Verses linked to the best hits' passages, best first by similarity to the query plus a
    boost for the link (halved at depth 2): a linked verse that is also close to the query ranks
    above one that is only one of the two."""
    table = sql.Identifier(table_name)
    seed_refs = conn.execute(
        sql.SQL("SELECT refs FROM {} WHERE chunk_id = ANY(%s) AND cardinality(refs) <= %s").format(table),
        [[chunk_id for chunk_id, _ in seeds], xrefs.MAX_LINKED_VERSES],
    ).fetchall()
    refs = [ref for (row_refs,) in seed_refs for ref in row_refs]
    if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [xrefs.table_name(table_name)]).fetchone()[0]:
        return []  # a version built before the graph existed (index layout < 4)
    found = xrefs.linked(conn, table_name, refs, config.xref_depth) if refs else {}
    if not found:
        return []
    # Two steps from ten passages can reach thousands of verses; the nearest and most often
    # cited are kept, which bounds the cost of scoring them.
    nearest = sorted(found.items(), key=lambda item: (item[1][0], -item[1][1]))[: config.xref_max_linked]
    found = dict(nearest)
    rows = conn.execute(
        sql.SQL("SELECT chunk_id, refs[1], 1 - (embedding <=> %(v)s) FROM {table} "
                "WHERE granularity = 'verse' AND refs && %(linked)s AND {where}").format(table=table, where=where),
        {"v": vector, "linked": list(found), **params},
    ).fetchall()
    scored = [(chunk_id, similarity + config.xref_boost / found[ref][0]) for chunk_id, ref, similarity in rows]
    return sorted(scored, key=lambda r: -r[1])[: config.candidates]


def vector_candidates(conn, table_name, vector, where, params, config: SearchConfig):
    table = sql.Identifier(table_name)
    with conn.transaction():
        # pgvector accepts at most 1,000; past that the iterative scan below supplies the rest.
        ef_search = min(max(config.ef_search, config.candidates), 1000)
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef_search)))
        # Filters apply after the HNSW scan; iterative scans keep going until enough rows pass.
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
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


def lexical_candidates(conn, table_name, query, extra: str, where, params, config: SearchConfig):
    """BM25 over the version's full-text index: any query word may match, rarer words weigh more,
    and long chunks do not win by length alone. Words of `extra` (the query's expansions) count
    at `expansion_weight`."""
    table, lexicon = sql.Identifier(table_name), sql.Identifier(store.lexicon_table(table_name))
    rows = conn.execute(
        sql.SQL(
            """
            WITH q AS (SELECT to_tsquery('english', replace(plainto_tsquery('english', %(query)s || ' ' || %(extra)s)::text,
                                                            ' & ', ' | ')) AS q),
                 terms AS (SELECT lexeme, max(w) AS w FROM (
                              SELECT lexeme, 1.0 AS w FROM unnest(to_tsvector('english', %(query)s))
                              UNION ALL
                              SELECT lexeme, %(ew)s FROM unnest(to_tsvector('english', %(extra)s))) t
                           GROUP BY lexeme),
                 stats AS (SELECT rows::float AS n, avg_doc_lexemes AS avgdl FROM index_versions WHERE table_name = %(table)s),
                 candidates AS (SELECT chunk_id, tsv FROM {table}, q WHERE tsv @@ q.q AND {where})
            SELECT c.chunk_id,
                   sum(t.w * ln(1 + (s.n - coalesce(l.ndoc, 1) + 0.5) / (coalesce(l.ndoc, 1) + 0.5))
                       * u.tf * ({k1} + 1) / (u.tf + {k1} * (1 - {b} + {b} * length(c.tsv) / s.avgdl))) AS score
            FROM candidates c
            CROSS JOIN stats s
            CROSS JOIN LATERAL (SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(c.tsv)) u
            JOIN terms t ON t.lexeme = u.lexeme
            LEFT JOIN {lexicon} l ON l.word = u.lexeme
            GROUP BY c.chunk_id
            ORDER BY score DESC, c.chunk_id
            LIMIT %(limit)s
            """
        ).format(table=table, where=where, lexicon=lexicon, k1=sql.Literal(config.bm25_k1), b=sql.Literal(config.bm25_b)),
        {"query": query, "extra": extra, "ew": config.expansion_weight, "table": table_name,
         **params, "limit": config.candidates},
    ).fetchall()
    return [(chunk_id, float(score)) for chunk_id, score in rows]


def title_candidates(conn, table_name, query, where, params, config: SearchConfig):
    """Pericopes whose title the query names: most of the title's words are in the query and
    most of the query's words are in the title ("the Lord's Prayer", "crossing the Red Sea")."""
    rows = conn.execute(
        sql.SQL(
            """
            WITH q AS (SELECT array(SELECT lexeme FROM unnest(to_tsvector('english', %(query)s))) AS words),
                 titled AS (SELECT chunk_id, array(SELECT lexeme FROM unnest(to_tsvector('english', title))) AS words
                            FROM {table} WHERE granularity = 'pericope' AND {where}),
                 scored AS (SELECT chunk_id,
                                   cardinality(array(SELECT unnest(t.words) INTERSECT SELECT unnest(q.words)))::float AS shared,
                                   cardinality(t.words) AS title_words, cardinality(q.words) AS query_words
                            FROM titled t, q WHERE t.words && q.words)
            SELECT chunk_id, (shared / title_words) * (shared / query_words) AS score
            FROM scored WHERE shared / title_words >= 0.5 AND shared / query_words >= 0.5
            ORDER BY score DESC, chunk_id LIMIT %(limit)s
            """
        ).format(table=sql.Identifier(table_name), where=where),
        {"query": query, **params, "limit": config.candidates},
    ).fetchall()
    return [(chunk_id, float(score)) for chunk_id, score in rows]
