"""The retrievers a ranked search fuses beside the lexical side (BM25 and pericope titles:
lectio.retrieval.lexical), each a list of (chunk_id, score) best first, and their fusion: HNSW
vectors, other translations' hits given as the search's translation's chunks of the same verses,
the cross-reference graph, and the citation prior that lifts what the corpus's commentators cite
often. Each reads through the caller's connection, so row-level security applies to every one."""

from __future__ import annotations

import math
from typing import Callable

from psycopg import sql

from lectio.bible.refs import Ref, UnknownReference
from lectio.index import xrefs
from lectio.retrieval.config import SearchConfig


def weigh_prominence(fused: list[tuple[str, float]], weight: float,
                     cited: Callable[[list[str]], dict[str, int]]) -> list[tuple[str, float]]:
    """`fused` weighed by the citation prior; `cited` counts the citations of chunks (the
    lexical index's, lectio.retrieval.lexical.LexicalIndex.cited)."""
    counts = cited([chunk_id for chunk_id, _ in fused])
    weighed = [(chunk_id, score * (1 + weight * math.log1p(counts.get(chunk_id, 0)))) for chunk_id, score in fused]
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


def covered_passages(conn, table_name, page: list[tuple[str, list[str], float]], where, params,
                     max_verses: int) -> list[tuple[str, float]]:
    """Each hit of `page` (chunk_id, refs, score, as read for the caller) given as the chunk
    `where` admits whose verses best match its own, at its score and in its order: a commentary on
    Matthew 11:28-30 speaks for the paragraph of those verses. Best is the most verses shared over
    all that either holds, then the fewest verses, then the id; a chunk `where` admits is itself.
    One of no verses, or of more than `max_verses`, drops out; a passage spoken for twice keeps
    its first place."""
    page = [(chunk_id, set(refs), score) for chunk_id, refs, score in page if 1 <= len(refs or ()) <= max_verses]
    spans = sorted({span for _, verses, _ in page for span in _spans(verses)})
    if not spans:
        return []
    # The passages that may share a verse with a hit: those starting from the chapter before one
    # of its runs of verses to the run's end. Read by ordinal, whose index row-level security lets
    # the planner use (an overlap of refs is no leakproof test, so it would read every row the
    # caller may).
    within, span_params = ordinal_spans(spans)
    passages = [(chunk_id, set(refs)) for chunk_id, refs in conn.execute(
        sql.SQL("SELECT chunk_id, refs FROM {table} WHERE ({within}) AND {where}").format(
            table=sql.Identifier(table_name), within=within, where=where), {**params, **span_params}).fetchall()]
    spoken: dict[str, float] = {}
    for chunk_id, verses, score in page:
        matching = [(other, refs) for other, refs in passages if verses & refs]
        if matching:
            best = min(matching, key=lambda item: (item[0] != chunk_id, -_jaccard(verses, item[1]), len(item[1]),
                                                   item[0]))[0]
            spoken.setdefault(best, score)
    return list(spoken.items())


def ordinal_spans(spans: list[tuple[int, int]]) -> tuple[sql.Composable, dict]:
    """A condition that a row's ordinal falls in one of `spans` (first, last), and its parameters."""
    condition = sql.SQL(" OR ").join(
        sql.SQL("ordinal BETWEEN {} AND {}").format(sql.Placeholder(f"s{i}"), sql.Placeholder(f"e{i}"))
        for i in range(len(spans)))
    params = {key: value for i, (first, last) in enumerate(spans) for key, value in ((f"s{i}", first), (f"e{i}", last))}
    return condition, params


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b)


def _spans(refs) -> list[tuple[int, int]]:
    """The ordinals a passage sharing a verse with `refs` starts within, one span per run of
    verses in neighbouring chapters of a book: a confession's proof texts in Genesis and Romans
    are two short spans, not the Bible between them. No span for refs that name no verse."""
    try:
        verses = sorted(Ref.from_id(ref) for ref in refs)
    except (ValueError, UnknownReference):
        return []
    runs: list[list[Ref]] = []
    for verse in verses:
        if runs and runs[-1][-1].book == verse.book and verse.chapter - runs[-1][-1].chapter <= 1:
            runs[-1].append(verse)
        else:
            runs.append([verse])
    return [(run[0].ordinal - run[0].verse - 1_000, run[-1].ordinal) for run in runs]
