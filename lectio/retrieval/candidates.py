"""The retrievers a ranked search fuses, each a list of (chunk_id, score) best first, and their
fusion: HNSW vectors, BM25 over the version's full text (and over other translations, given as
the search's translation's chunks of the same verses), pericope titles, the cross-reference
graph, and the citation prior that lifts what the corpus's commentators cite often. Each reads
through the caller's connection, so row-level security applies to every one."""

from __future__ import annotations

import math

from psycopg import sql

from lectio.index import citations
from lectio.index import postings
from lectio.index import tables
from lectio.index import xrefs
from lectio.retrieval.config import SearchConfig


def weigh_prominence(conn, table_name, fused: list[tuple[str, float]], weight: float,
                     layout: int | None = None, mirror=None) -> list[tuple[str, float]]:
    """`fused` weighed by the citation prior; the counts from the version's lexical mirror where
    there is one (lectio.index.mirror), else from its citation table."""
    ids = [chunk_id for chunk_id, _ in fused]
    cited = mirror.most_cited(ids) if mirror is not None else citations.most_cited(conn, table_name, ids, layout)
    weighed = [(chunk_id, score * (1 + weight * math.log1p(cited.get(chunk_id, 0)))) for chunk_id, score in fused]
    return sorted(weighed, key=lambda item: -item[1])


def fuse(lists: list[tuple[float, list[tuple[str, float]]]], rrf_k: int,
         score_power: float = 0.0) -> list[tuple[str, float]]:
    """Reciprocal rank fusion, each list's share scaled by (score / the list's best score) **
    `score_power`. Ranks alone throw away how far apart the scores are: a quoted verse at cosine
    0.99 with the next at 0.58 counts no more than first of a close field, and weaker signals
    outvote it. At 0 this is plain RRF; a close field (ratios near 1) fuses as by ranks."""
    fused: dict[str, float] = {}
    for weight, ranked in lists:
        best = ranked[0][1] if ranked else 0.0
        for rank, (chunk_id, score) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * _strength(score, best, score_power) / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def _strength(score: float, best: float, power: float) -> float:
    if not power or best <= 0:
        return 1.0
    return (max(score, 0.0) / best) ** power


def xref_candidates(conn, table_name, seeds, vector, where, params, config: SearchConfig, layout: int | None = None):
    """Verses linked to the best hits' passages, best first by similarity to the query plus a
    boost for the link (halved at depth 2): a linked verse that is also close to the query ranks
    above one that is only one of the two."""
    table = sql.Identifier(table_name)
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


def vector_candidates(conn, table_name, vector, where, params, config: SearchConfig):
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


# The query's words, each with its weight (expansion words count less), and the version's
# statistics (N and mean length, public chunks' for every caller: lectio.index.postings): shared by
# both ways of finding BM25 candidates.
_TERMS = """
    terms AS (SELECT lexeme, max(w) AS w FROM (
                 SELECT lexeme, 1.0 AS w FROM unnest(to_tsvector('english', %(query)s))
                 UNION ALL
                 SELECT lexeme, %(ew)s FROM unnest(to_tsvector('english', %(extra)s))) t
              GROUP BY lexeme),
    stats AS (SELECT %(bm25_n)s::float AS n, %(bm25_avgdl)s::float AS avgdl)
"""

# Versions built before postings existed: every chunk that holds any query word. The query is
# written from the words themselves, each quoted as tsquery input wants: given to to_tsquery they
# were stemmed a second time ('purpos' became 'purpo'), and the chunks holding them were missed.
_MATCHING = r"""
    q AS (SELECT string_agg('''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''', ' | ')::tsquery AS q
          FROM terms),
    candidates AS (SELECT chunk_id, tsv FROM {table}, q WHERE tsv @@ q.q AND {where})
"""

# The best `depth` postings of each query word, summed; the best `rescored` of those chunks are
# scored in full below. A word rarer than `depth` chunks is read whole. Each word's weight is
# computed once (materialized; inlined, it was computed again for every posting read), and the
# arithmetic is float8 throughout: a numeric constant made it numeric, slower and no more exact
# here (the half-integers and quarters involved are exact in float8).
_BEST_POSTINGS = """
    weighted AS MATERIALIZED (
        SELECT t.lexeme, t.w * ln(1 + (s.n - coalesce(l.ndoc, 1) + 0.5::float8) / (coalesce(l.ndoc, 1) + 0.5::float8)) AS wi
        FROM terms t CROSS JOIN stats s LEFT JOIN {lexicon} l ON l.word = t.lexeme),
    best AS (SELECT p.chunk_id FROM weighted w
             CROSS JOIN LATERAL (SELECT chunk_id, impact FROM {postings}
                                 WHERE term = w.lexeme AND {posting_filter}
                                 ORDER BY impact DESC LIMIT %(depth)s) p
             GROUP BY p.chunk_id ORDER BY sum(w.wi * p.impact) DESC, p.chunk_id LIMIT %(rescored)s),
    candidates AS (SELECT chunk_id, tsv FROM {table} WHERE chunk_id IN (SELECT chunk_id FROM best) AND {where})
"""

# Filters on columns postings lack (testament, genre, a commentary's tradition) are checked on the
# posting's chunk while reading, so a word's best postings are its best among what may be returned.
_ON_CHUNK = "EXISTS (SELECT 1 FROM {table} c WHERE c.chunk_id = {postings}.chunk_id AND {where})"

# BM25 of each candidate, from its own full-text vector: the same score whichever way it was found.
_SCORED = """
    SELECT c.chunk_id,
           sum(t.w * ln(1 + (s.n - coalesce(l.ndoc, 1) + 0.5::float8) / (coalesce(l.ndoc, 1) + 0.5::float8))
               * u.tf * ({k1}::float8 + 1) / (u.tf + {k1}::float8 * (1 - {b}::float8 + {b}::float8 * length(c.tsv) / s.avgdl))) AS score
    FROM candidates c
    CROSS JOIN stats s
    CROSS JOIN LATERAL (SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(c.tsv)
                        WHERE lexeme = ANY(ARRAY(SELECT lexeme FROM terms))) u
    JOIN terms t ON t.lexeme = u.lexeme
    LEFT JOIN {lexicon} l ON l.word = u.lexeme
    GROUP BY c.chunk_id
    ORDER BY score DESC, c.chunk_id
    LIMIT %(limit)s
"""


def lexical_candidates(conn, table_name, query, extra: str, where, params, config: SearchConfig,
                       layout: int | None = None, posting_filter=None):
    """BM25 over the version's words: any query word may match, rarer words weigh more, and long
    chunks do not win by length alone. Words of `extra` (the query's expansions) count at
    `expansion_weight`. With postings (layout 7), `posting_filter` is `where` in the postings'
    own columns (lectio.index.postings.FILTER_COLUMNS), or None when the filters need the chunk."""
    if (layout or 0) >= 7:
        found = _BEST_POSTINGS.replace("{posting_filter}", _ON_CHUNK if posting_filter is None else "{posting_filter}")
    else:
        found = _MATCHING
    statement = sql.SQL("WITH " + _TERMS + "," + found + _SCORED).format(
        table=sql.Identifier(table_name), where=where, lexicon=sql.Identifier(tables.lexicon_table(table_name)),
        postings=sql.Identifier(postings.table_name(table_name)), posting_filter=posting_filter or sql.SQL(""),
        k1=sql.Literal(config.lexical.k1), b=sql.Literal(config.lexical.b))
    values = {"query": query, "extra": extra, "ew": config.expansion.weight, "table": table_name, **params,
              "limit": config.candidates, "depth": config.lexical.depth, "rescored": config.lexical.rescored}
    if (layout or 0) < 7:
        rows = conn.execute(statement, values).fetchall()
    else:
        # The planner expects a word's postings to be a few hundred (the average word's) and sorts
        # them to sum them; a common word's run is thousands, which hashing sums in a tenth of the
        # time. Only for this statement (searches run in a transaction, so the setting is local).
        conn.execute("SELECT set_config('enable_sort', 'off', true)")
        rows = conn.execute(statement, values).fetchall()
        conn.execute("SELECT set_config('enable_sort', 'on', true)")
    return [(chunk_id, float(score)) for chunk_id, score in rows]


def title_candidates(conn, table_name, query, where, params, config: SearchConfig, layout: int | None = None):
    """Pericopes whose title the query names: most of the title's words are in the query and at
    least `title_query_share` of the query's words are in the title ("the Lord's Prayer",
    "crossing the Red Sea")."""
    rows = conn.execute(
        sql.SQL(
            """
            WITH q AS (SELECT tsvector_to_array(to_tsvector('english', %(query)s)) AS words),
                 -- The query's words written out, not read from q: a constant the planner can
                 -- look up in the title words' index.
                 titled AS (SELECT chunk_id, words FROM (SELECT chunk_id, {words} AS words FROM {table}
                                                         WHERE granularity = 'pericope' AND {where}) t
                            WHERE t.words && tsvector_to_array(to_tsvector('english', %(query)s))),
                 scored AS (SELECT chunk_id,
                                   cardinality(array(SELECT unnest(t.words) INTERSECT SELECT unnest(q.words)))::float AS shared,
                                   cardinality(t.words) AS title_words, cardinality(q.words) AS query_words
                            FROM titled t, q)
            SELECT chunk_id, (shared / title_words) * (shared / query_words) AS score
            FROM scored WHERE shared / title_words >= 0.5 AND shared / query_words >= %(query_share)s
            ORDER BY score DESC, chunk_id LIMIT %(limit)s
            """
        ).format(table=sql.Identifier(table_name), where=where, words=tables.title_words(layout)),
        {"query": query, **params, "limit": config.candidates, "query_share": config.titles.query_share},
    ).fetchall()
    return [(chunk_id, float(score)) for chunk_id, score in rows]


def twins(conn, table_name, ranked: list[tuple[str, float]], where, params) -> list[tuple[str, float]]:
    """Each ranked chunk given as the chunk of the same kind, granularity and verses that `where`
    admits in a translation (its twin in another translation), at its score and in its order. A
    chunk without one drops out: a paragraph another translation cuts elsewhere, a chunk of no
    verses. A chunk of no translation is never a twin: a church father's paragraph citing just
    that verse is not the verse's paragraph."""
    if not ranked:
        return []
    rows = conn.execute(
        sql.SQL(
            """
            SELECT t.chunk_id, o.score
            FROM unnest(%(ranked_ids)s::text[], %(ranked_scores)s::float8[]) WITH ORDINALITY AS o(chunk_id, score, n)
            JOIN {table} k ON k.chunk_id = o.chunk_id
            JOIN (SELECT chunk_id, kind, translation, ordinal, granularity, refs FROM {table} WHERE {where}) t
              ON t.ordinal = k.ordinal AND t.granularity = k.granularity AND t.refs = k.refs
                 AND t.kind = k.kind AND t.translation IS NOT NULL AND t.chunk_id <> k.chunk_id
            ORDER BY o.n, t.chunk_id
            """
        ).format(table=sql.Identifier(table_name), where=where),
        {**params, "ranked_ids": [chunk_id for chunk_id, _ in ranked],
         "ranked_scores": [score for _, score in ranked]},
    ).fetchall()
    found: dict[str, float] = {}
    for chunk_id, score in rows:
        found.setdefault(chunk_id, float(score))
    return list(found.items())
