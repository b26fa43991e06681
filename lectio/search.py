"""Searching an index version (the live one by default).

A reference is looked up directly; a question about a Greek or Hebrew word gets its Strong's
entry and the verses that use it; anything else is ranked by several retrievers fused by
reciprocal rank fusion (seed 002): HNSW vectors, BM25 with theology query expansion, pericope
titles, and the corpus's own cross-reference graph. Every read runs as the application role under
row-level security with the caller's principals."""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import psycopg
from psycopg import sql

from lectio import prominence, store, word_study, xrefs
from lectio.expansion import expansions
from lectio.lexicon import plain_letters
from lectio.model import Embedder
from lectio.refs import RefRange, UnknownReference, parse_reference

DEFAULT_PRINCIPALS = ("public",)
# With several translations indexed, one is preferred unless the caller names another.
DEFAULT_TRANSLATION = "WEB"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


@dataclass(frozen=True)
class SearchConfig:
    """How a non-reference query is answered. Seed 002/003: lexical matching catches what
    vectors blur (names, rare words), vectors catch paraphrase; RRF fuses the two rankings."""

    mode: str = "hybrid"  # hybrid | vector | lexical
    candidates: int = 100  # taken from each side before fusion
    rrf_k: int = 60
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    # The vector side takes `candidates` (100) rows from HNSW. Measured on the full index (v41,
    # benchmarks/search_latency.py): ef_search 100 finds 95.5 % of the exact top 100 (one query
    # only 75 %), 400 finds 99.5 % for 27 instead of 12 ms, a small part of a hybrid search.
    ef_search: int = 400
    return_parents: bool = False  # replace child hits by their parent chunk, collapsing duplicates
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    # Query expansion from data/vocabulary/query_expansion.yaml; expansion words weigh less than
    # the query's own.
    expand_lexical: bool = True
    expand_vector: bool = False
    expansion_weight: float = 0.5
    # Named passages ("the Lord's Prayer", "crossing the Red Sea") match pericope titles.
    title_weight: float = 1.0
    # A hit whose verses are all covered by better-ranked hits adds nothing new: drop it.
    collapse_covered: bool = True
    # Cross-reference expansion (seed 002): verses the corpus links to the best hits' passages,
    # within `xref_depth` steps, ranked by their similarity to the query plus a boost for the link.
    # Off by default: on the theology set it left recall@20 where it was (.615 → .614 at weight
    # 0.3, .616 at 1.0) and cost precision@5 (.394 → .377, .343); see the README.
    xref_weight: float = 0.0
    xref_seeds: int = 10  # best fused hits whose verses seed the traversal
    xref_depth: int = 2
    xref_boost: float = 0.15
    xref_max_linked: int = 200
    # A query about a Greek or Hebrew word gets its Strong's entry and the verses that use it.
    word_study: bool = True
    # Passages the corpus's commentators cite often rank higher among equally close hits: a
    # scripture hit's fused score is multiplied by 1 + weight * ln(1 + citations of its most cited
    # verse) (lectio.prominence). Hybrid mode only, so vector and lexical stay plain baselines.
    prominence_weight: float = 0.1
    # One prolific commentary (Spurgeon's 21,700 passages on the Psalms) can fill a first page:
    # past this many hits from one non-scripture source, its further hits follow all the others.
    # Hybrid mode, and only when no kind is asked for; None turns it off.
    per_source: int | None = 2
    # Maximal marginal relevance (seed 003: a crowded theme returns near-duplicate verses): each
    # next hit maximises lambda * relevance - (1 - lambda) * its similarity to the hits already
    # taken. None keeps the ranking as fused.
    mmr_lambda: float | None = None


_COLUMNS = ["chunk_id", "kind", "refs", "source_id", "breadcrumb", "header", "text", "granularity", "translation", "title"]


@dataclass(frozen=True)
class Result:
    rank: int
    chunk_id: str
    kind: str
    refs: list[str]
    source_id: str
    breadcrumb: str | None
    text: str  # what a caller hands to a model: the context header, then the chunk
    score: float
    granularity: str
    translation: str | None


@dataclass
class SearchResponse:
    query: str
    mode: str  # "reference", or the SearchConfig mode that answered
    index_version: str | None
    results: list[Result] = field(default_factory=list)
    message: str | None = None

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "index_version": self.index_version,
            "message": self.message,
            "results": [asdict(r) for r in self.results],
        }


def search(
    conn: psycopg.Connection,
    query: str,
    *,
    k: int = 10,
    principals: tuple[str, ...] = DEFAULT_PRINCIPALS,
    kind: str | None = None,
    translation: str | None = None,
    version: str | None = None,
    embedder: Embedder | None = None,
    config: SearchConfig | None = None,
    filters: Filters | None = None,
) -> SearchResponse:
    """`kind` and `translation` are shorthands for the same fields of `filters`."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    # PostgreSQL text cannot hold NUL, and no control character means anything in a query.
    query = _CONTROL.sub(" ", query).strip()
    if not query:
        return SearchResponse(query, "none", version, message="empty query: nothing to search for")
    version = version or store.live_version(conn)
    if version is None:
        return SearchResponse(query, "none", None, message="no live index yet: run `lectio run` first")
    info = store.get_version(conn, version)
    if info is None or info.status != "ready":
        return SearchResponse(query, "none", version, message=f"index version {version!r} is not ready")
    table = info.table_name
    given = filters or Filters()
    if kind or translation:
        given = replace(given, kind=kind or given.kind, translation=translation or given.translation)
    filters = _Filters(principals, given)
    try:
        ranges = parse_reference(query)
    except UnknownReference as exc:
        return SearchResponse(query, "reference", version, message=str(exc))
    embedder = embedder or Embedder()
    with conn.transaction():
        # Every read of chunks runs as the application role under row-level security, with the
        # caller's principals; the WHERE clause on acl only helps the planner use its index.
        store.act_as_reader(conn, principals)
        if ranges:
            return _lookup(conn, sql.Identifier(table), query, ranges, k, filters, version)
        config = config or SearchConfig()
        word = word_study.detect(query) if config.word_study else None
        if word is not None:
            response = _word_study(conn, table, query, word, k, filters, version, config, embedder)
            if response is not None:
                return response
        return _ranked_search(conn, table, query, k, filters, version, config, embedder)


@dataclass(frozen=True)
class Filters:
    """What a caller narrows a search to. Testament and genre are scripture's (chunks of other
    kinds carry the book's where they comment on one); tradition and tier are a commentary's."""

    kind: str | None = None
    translation: str | None = None
    testament: str | None = None  # OT | NT (or old | new, as chunks store it)
    genre: str | None = None
    tradition: str | None = None
    tier: str | None = None


_TESTAMENTS = {"ot": "old", "old": "old", "nt": "new", "new": "new"}


@dataclass(frozen=True)
class _Filters:
    principals: tuple[str, ...]
    given: Filters

    @property
    def translation(self) -> str | None:
        return self.given.translation

    def where(self, translation: str | None) -> tuple[sql.Composable, dict]:
        """A WHERE clause with named placeholders (f_*), and its parameters."""
        clauses, params = [sql.SQL("acl && %(f_acl)s")], {"f_acl": list(self.principals)}
        if not self.given.kind:
            # Dictionary entries answer word studies (lectio.word_study), not topical questions.
            clauses.append(sql.SQL("kind <> 'lexicon'"))
        for column in ("kind", "testament", "genre"):
            value = getattr(self.given, column)
            if column == "testament" and value:
                value = _TESTAMENTS.get(value.lower(), value)
            if value:
                clauses.append(sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(f"f_{column}")))
                params[f"f_{column}"] = value
        for key in ("tradition", "tier"):
            value = getattr(self.given, key)
            if value:
                clauses.append(sql.SQL("metadata ->> {} = {}").format(sql.Literal(key), sql.Placeholder(f"f_{key}")))
                params[f"f_{key}"] = value
        if translation:
            clauses.append(sql.SQL("(translation IS NULL OR translation = %(f_translation)s)"))
            params["f_translation"] = translation
        return sql.SQL(" AND ").join(clauses), params


def _rows_to_results(rows, scores) -> list[Result]:
    results = []
    for rank, (row, score) in enumerate(zip(rows, scores), start=1):
        r = dict(zip(_COLUMNS, row))
        text = f"{r['header']}\n{r['text']}" if r["header"] else r["text"]
        results.append(
            Result(rank, r["chunk_id"], r["kind"], list(r["refs"]), r["source_id"], r["breadcrumb"], text,
                   round(float(score), 4), r["granularity"], r["translation"])
        )
    return results


def _lookup(conn, table, query, ranges: list[RefRange], k, filters: _Filters, version) -> SearchResponse:
    """Verses of the referenced ranges in canonical order (the preferred translation first)."""
    span = sql.SQL(" OR ").join(
        sql.SQL("ordinal BETWEEN {} AND {}").format(sql.Placeholder(f"s{i}"), sql.Placeholder(f"e{i}"))
        for i in range(len(ranges)))
    span_params = {key: value for i, r in enumerate(ranges)
                   for key, value in ((f"s{i}", r.start_ordinal), (f"e{i}", r.end_ordinal))}
    for translation in _translation_preference(filters):
        where, params = filters.where(translation)
        rows = conn.execute(
            sql.SQL("SELECT {cols} FROM {table} WHERE granularity = 'verse' AND ({span}) AND {where} "
                    "ORDER BY ordinal, translation LIMIT %(k)s").format(
                cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), table=table, span=span, where=where),
            {**span_params, **params, "k": k},
        ).fetchall()
        if rows:
            return SearchResponse(query, "reference", version, _rows_to_results(rows, [1.0] * len(rows)))
    labels = "; ".join(r.label for r in ranges)
    return SearchResponse(query, "reference", version, message=f"no verses of {labels} are in the index")


def _translation_preference(filters: _Filters) -> list[str | None]:
    if filters.translation:
        return [filters.translation]
    return [DEFAULT_TRANSLATION, None]


def _ranked(conn, table_name, query, filters: _Filters, config: SearchConfig, embedder: Embedder) -> list[tuple[str, float]]:
    """(chunk_id, score) best first: vector, lexical, or both (with pericope titles and the
    cross-reference graph) fused by reciprocal rank fusion."""
    where, params = filters.where(filters.translation or DEFAULT_TRANSLATION)
    extra = " ".join(expansions(query))
    vector = None
    lists = []
    if config.mode in ("hybrid", "vector"):
        vector = embedder.encode([f"{query} {extra}" if config.expand_vector and extra else query])[0]
        lists.append((config.vector_weight, _vector_candidates(conn, table_name, vector, where, params, config)))
    if config.mode in ("hybrid", "lexical"):
        lexical_extra = extra if config.expand_lexical else ""
        lists.append((config.lexical_weight,
                      _lexical_candidates(conn, table_name, query, lexical_extra, where, params, config)))
        if config.title_weight:
            lists.append((config.title_weight, _title_candidates(conn, table_name, query, where, params, config)))
    fused = _fuse(lists, config.rrf_k) if len(lists) > 1 else lists[0][1]
    if config.mode == "hybrid" and config.xref_weight:
        linked = _xref_candidates(conn, table_name, fused[: config.xref_seeds], vector, where, params, config)
        if linked:
            fused = _fuse([*lists, (config.xref_weight, linked)], config.rrf_k)
    if config.mode == "hybrid" and config.prominence_weight:
        fused = _weigh_prominence(conn, table_name, fused, config.prominence_weight)
    return fused


def _weigh_prominence(conn, table_name, fused: list[tuple[str, float]], weight: float) -> list[tuple[str, float]]:
    cited = prominence.most_cited(conn, table_name, [chunk_id for chunk_id, _ in fused])
    weighed = [(chunk_id, score * (1 + weight * math.log1p(cited.get(chunk_id, 0)))) for chunk_id, score in fused]
    return sorted(weighed, key=lambda item: -item[1])


def _fuse(lists: list[tuple[float, list[tuple[str, float]]]], rrf_k: int) -> list[tuple[str, float]]:
    fused: dict[str, float] = {}
    for weight, ranked in lists:
        for rank, (chunk_id, _) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def _xref_candidates(conn, table_name, seeds, vector, where, params, config: SearchConfig):
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


def _vector_candidates(conn, table_name, vector, where, params, config: SearchConfig):
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


def _lexical_candidates(conn, table_name, query, extra: str, where, params, config: SearchConfig):
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


def _title_candidates(conn, table_name, query, where, params, config: SearchConfig):
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


def _ranked_search(conn, table_name, query, k, filters: _Filters, version, config: SearchConfig, embedder) -> SearchResponse:
    ranked = _ranked(conn, table_name, query, filters, config, embedder)
    if config.return_parents:
        ranked = _parents_of(conn, table_name, ranked)
    # More than k hits are read when collapsing may drop some, spreading may move some back, or
    # MMR chooses among them.
    reranked = config.collapse_covered or config.per_source is not None or config.mmr_lambda is not None
    pool = ranked[: k * 4 if reranked else k]
    scores = dict(pool)
    hits = [(row, scores[row[0]]) for row in _rows_by_id(conn, table_name, [chunk_id for chunk_id, _ in pool])]
    if config.collapse_covered:
        hits = _collapse_covered(hits)
    if config.per_source is not None and config.mode == "hybrid" and filters.given.kind is None:
        hits = _spread_sources(hits, config.per_source)
    if config.mmr_lambda is not None:
        hits = _mmr(conn, table_name, hits, k, config.mmr_lambda)
    hits = hits[:k]
    return SearchResponse(
        query, config.mode, version, _rows_to_results([row for row, _ in hits], [score for _, score in hits])
    )


def _word_study(conn, table_name, query, word: word_study.WordQuery, k, filters: _Filters, version,
                config: SearchConfig, embedder) -> SearchResponse | None:
    """The lexicon entry (exact, then fuzzy, then by meaning), then the WEB verses tagged with its
    Strong's number. None when a bare word turns out to be no transliteration: an ordinary search
    answers it instead."""
    entries = _lexicon_entries(conn, table_name, word, filters, config, embedder)
    if not entries:
        if word.how == "number":
            return SearchResponse(query, "word-study", version, message=f"no Strong's entry for {word.term!r} is in the index")
        return None
    table = sql.Identifier(table_name)
    numbers = list(dict.fromkeys(number for _, number in entries))
    where, params = filters.where(filters.translation or DEFAULT_TRANSLATION)
    # The query's words besides a number or Greek/Hebrew script ("G26 in John's letters", "the
    # Greek word for love") order the verses by meaning; a bare number or word lists them in
    # canonical order.
    rest = _NUMBER_OR_SCRIPT.sub(" ", query).strip()
    order = sql.SQL("ordinal")
    query_params: dict = {}
    if len(rest.split()) >= 2:
        order, query_params = sql.SQL("embedding <=> %(v)s"), {"v": embedder.encode([rest])[0]}
    # Materialised so the planner filters by number first: an HNSW scan ordered by the query
    # would see only its nearest few hundred verses and could return fewer than k.
    verses = conn.execute(
        sql.SQL("WITH tagged AS MATERIALIZED (SELECT chunk_id, ordinal, embedding FROM {table} "
                "WHERE granularity = 'verse' AND (metadata -> 'strongs') ?| %(numbers)s AND {where}) "
                "SELECT chunk_id FROM tagged ORDER BY {order} LIMIT %(k)s").format(table=table, where=where, order=order),
        {"numbers": numbers, **params, **query_params, "k": k},
    ).fetchall()
    ids = [chunk_id for chunk_id, _ in entries] + [chunk_id for (chunk_id,) in verses]
    rows = _rows_by_id(conn, table_name, ids[:k])
    return SearchResponse(query, "word-study", version, _rows_to_results(rows, [1.0] * len(rows)))


_NUMBER_OR_SCRIPT = re.compile(r"\b(?:strong'?s\s+)?[GH]\d{1,5}\b|[\u0370-\u03ff\u1f00-\u1fff\u0590-\u05ff]+", re.IGNORECASE)


def _lexicon_entries(conn, table_name, word: word_study.WordQuery, filters: _Filters, config: SearchConfig,
                     embedder) -> list[tuple[str, str]]:
    """(chunk_id, Strong's number) of the entries the word names, best first."""
    table = sql.Identifier(table_name)
    # The caller's testament, genre or tradition filters narrow the verses, not the dictionary.
    where, params = _Filters(filters.principals, Filters(kind="lexicon")).where(None)
    language = sql.SQL("TRUE")
    if word.language:
        language = sql.SQL("metadata ->> 'language' = %(language)s")
        params = {**params, "language": word.language}

    def matching(condition: str, order: str = "chunk_id", **values) -> list[tuple[str, str]]:
        return conn.execute(
            sql.SQL("SELECT chunk_id, metadata ->> 'strongs' FROM {table} WHERE kind = 'lexicon' AND {language} "
                    "AND {where} AND {condition} ORDER BY {order} LIMIT 3").format(
                table=table, language=language, where=where, condition=sql.SQL(condition), order=sql.SQL(order)),
            {**params, **values},
        ).fetchall()

    if word.how == "number":
        return matching("metadata ->> 'strongs' = %(term)s", term=word.term)
    if word.how == "script":
        term = plain_letters(word.term)
        return matching("metadata ->> 'lemma_plain' = %(term)s", term=term) or matching(
            "similarity(metadata ->> 'lemma_plain', %(term)s) > 0.4",
            "similarity(metadata ->> 'lemma_plain', %(term)s) DESC, chunk_id", term=term)
    if word.how == "transliteration":
        words = word.term.split()
        exact = matching("metadata ->> 'plain' = ANY(%(words)s)", words=words)
        if exact or not word.language:
            return exact
        return matching("similarity(metadata ->> 'plain', %(term)s) > 0.4",
                        "similarity(metadata ->> 'plain', %(term)s) DESC, chunk_id", term=word.term)
    # "the Greek word for love": first the entries whose definition holds the word, ranked by how
    # many WEB verses that say the word carry their number (the word the translators rendered so
    # most often); then, for a meaning no definition states, the entries nearest by hybrid search.
    used = _entries_by_use(conn, table, word, where, params, language)
    if used:
        return used
    ranked = _ranked(conn, table_name, word.term, _Filters(filters.principals, Filters(kind="lexicon")),
                     # The word asked about, not its theological neighbours: "grace" must find
                     # charis, not the words for mercy the expansion would add.
                     replace(config, xref_weight=0, title_weight=0, expand_lexical=False, expand_vector=False),
                     embedder)
    ids = [chunk_id for chunk_id, _ in ranked[:50]]
    return matching("chunk_id = ANY(%(ids)s)", "array_position(%(ids)s, chunk_id)", ids=ids)


def _entries_by_use(conn, table, word: word_study.WordQuery, where, params, language) -> list[tuple[str, str]]:
    return conn.execute(
        sql.SQL(
            """
            WITH uses AS (
                SELECT number, count(*) AS verses
                FROM {table}, jsonb_array_elements_text(metadata -> 'strongs') AS number
                WHERE granularity = 'verse' AND translation = %(translation)s
                  AND tsv @@ plainto_tsquery('english', %(term)s)
                GROUP BY number)
            SELECT e.chunk_id, e.metadata ->> 'strongs'
            FROM {table} e JOIN uses u ON u.number = e.metadata ->> 'strongs'
            WHERE e.kind = 'lexicon' AND {language} AND {where}
              AND e.tsv @@ plainto_tsquery('english', %(term)s)
            ORDER BY u.verses DESC, e.chunk_id
            LIMIT 3
            """
        ).format(table=table, language=language, where=where),
        {**params, "term": word.term, "translation": DEFAULT_TRANSLATION},
    ).fetchall()


def _rows_by_id(conn, table_name, ids: list[str]) -> list[tuple]:
    rows = conn.execute(
        sql.SQL("SELECT {cols} FROM {table} WHERE chunk_id = ANY(%s)").format(
            cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), table=sql.Identifier(table_name)),
        [ids],
    ).fetchall()
    by_id = {row[0]: row for row in rows}
    return [by_id[i] for i in ids if i in by_id]


def _mmr(conn, table_name, hits: list[tuple[tuple, float]], k: int, lam: float) -> list[tuple[tuple, float]]:
    """Re-rank by maximal marginal relevance; relevance is the fused score scaled to [0, 1],
    redundancy the cosine similarity of the chunks' embeddings."""
    if len(hits) <= 1:
        return hits
    ids = [row[0] for row, _ in hits]
    vectors = dict(conn.execute(
        sql.SQL("SELECT chunk_id, embedding FROM {} WHERE chunk_id = ANY(%s)").format(sql.Identifier(table_name)), [ids]
    ).fetchall())
    matrix = np.array([_as_array(vectors[i]) for i in ids], dtype=np.float32)
    similarity = matrix @ matrix.T  # embeddings are unit length
    scores = np.array([score for _, score in hits], dtype=np.float32)
    relevance = scores / scores.max() if scores.max() > 0 else scores
    chosen: list[int] = []
    remaining = list(range(len(hits)))
    while remaining and len(chosen) < k:
        def value(i: int) -> float:
            redundancy = max((similarity[i, j] for j in chosen), default=0.0)
            return lam * relevance[i] - (1 - lam) * redundancy
        best = max(remaining, key=value)
        chosen.append(best)
        remaining.remove(best)
    return [hits[i] for i in chosen]


def _as_array(value) -> np.ndarray:
    # pgvector's loaders give numpy arrays or Vector objects; without them the text form arrives.
    if hasattr(value, "to_numpy"):
        return value.to_numpy()
    return np.asarray(json.loads(value) if isinstance(value, str) else value)


def _collapse_covered(hits: list[tuple[tuple, float]]) -> list[tuple[tuple, float]]:
    """Drop a hit whose verses, in its translation, are all in better-ranked hits: a verse under
    the paragraph already shown, the same paragraph reached twice. Hits without verse refs
    (documents, notes) and commentary (its text is not the verses') always stay."""
    refs_at, kind_at, translation_at = _COLUMNS.index("refs"), _COLUMNS.index("kind"), _COLUMNS.index("translation")
    covered: set[tuple[str | None, str]] = set()
    kept = []
    for row, score in hits:
        refs = row[refs_at] or []
        if row[kind_at] != "scripture" or not refs:
            kept.append((row, score))
            continue
        keys = {(row[translation_at], ref) for ref in refs}
        if keys <= covered:
            continue
        covered |= keys
        kept.append((row, score))
    return kept


def _spread_sources(hits: list[tuple[tuple, float]], per_source: int) -> list[tuple[tuple, float]]:
    """Keep the order, but move each non-scripture source's hits past its first `per_source` to
    the end (still in order): scripture's translations are never capped."""
    source_at, kind_at = _COLUMNS.index("source_id"), _COLUMNS.index("kind")
    taken: dict[str, int] = {}
    first, later = [], []
    for row, score in hits:
        if row[kind_at] == "scripture":
            first.append((row, score))
            continue
        taken[row[source_at]] = taken.get(row[source_at], 0) + 1
        (first if taken[row[source_at]] <= per_source else later).append((row, score))
    return first + later


def _parents_of(conn, table_name, ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Seed 004: retrieve the child, return the parent. A hit with a parent (a verse in its
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
