"""Searching the live index: a reference is looked up directly, anything else by vector."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import psycopg
from psycopg import sql

from lectio import store
from lectio.model import Embedder
from lectio.refs import RefRange, UnknownReference, parse_reference

DEFAULT_PRINCIPALS = ("public",)
# With several translations indexed, one is preferred unless the caller names another.
DEFAULT_TRANSLATION = "WEB"


@dataclass(frozen=True)
class SearchConfig:
    """How a non-reference query is answered. Seed 002/003: lexical matching catches what
    vectors blur (names, rare words), vectors catch paraphrase; RRF fuses the two rankings."""

    mode: str = "hybrid"  # hybrid | vector | lexical
    candidates: int = 100  # taken from each side before fusion
    rrf_k: int = 60
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    ef_search: int = 100
    return_parents: bool = False  # replace child hits by their parent chunk, collapsing duplicates
    bm25_k1: float = 1.2
    bm25_b: float = 0.75


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
) -> SearchResponse:
    version = version or store.live_version(conn)
    if version is None:
        return SearchResponse(query, "none", None, message="no live index yet: run `lectio run` first")
    info = store.get_version(conn, version)
    if info is None or info.status != "ready":
        return SearchResponse(query, "none", version, message=f"index version {version!r} is not ready")
    table = info.table_name
    filters = _Filters(principals, kind, translation)
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
        return _ranked_search(conn, table, query, k, filters, version, config or SearchConfig(), embedder)


@dataclass(frozen=True)
class _Filters:
    principals: tuple[str, ...]
    kind: str | None
    translation: str | None

    def where(self, translation: str | None) -> tuple[sql.Composable, list]:
        clauses, params = [sql.SQL("acl && %s")], [list(self.principals)]
        if self.kind:
            clauses.append(sql.SQL("kind = %s"))
            params.append(self.kind)
        if translation:
            clauses.append(sql.SQL("(translation IS NULL OR translation = %s)"))
            params.append(translation)
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
    span = sql.SQL(" OR ").join(sql.SQL("ordinal BETWEEN %s AND %s") for _ in ranges)
    span_params = [o for r in ranges for o in (r.start_ordinal, r.end_ordinal)]
    for translation in _translation_preference(filters):
        where, params = filters.where(translation)
        rows = conn.execute(
            sql.SQL("SELECT {cols} FROM {table} WHERE granularity = 'verse' AND ({span}) AND {where} "
                    "ORDER BY ordinal, translation LIMIT %s").format(
                cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), table=table, span=span, where=where),
            [*span_params, *params, k],
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
    """(chunk_id, score) best first: vector, lexical, or both fused by reciprocal rank fusion."""
    where, params = filters.where(filters.translation or DEFAULT_TRANSLATION)
    lists = []
    if config.mode in ("hybrid", "vector"):
        lists.append((config.vector_weight, _vector_candidates(conn, table_name, query, where, params, config, embedder)))
    if config.mode in ("hybrid", "lexical"):
        lists.append((config.lexical_weight, _lexical_candidates(conn, table_name, query, where, params, config)))
    if len(lists) == 1:
        return lists[0][1]
    fused: dict[str, float] = {}
    for weight, ranked in lists:
        for rank, (chunk_id, _) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight / (config.rrf_k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def _vector_candidates(conn, table_name, query, where, params, config: SearchConfig, embedder: Embedder):
    table = sql.Identifier(table_name)
    vector = embedder.encode([query])[0]
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(config.ef_search, config.candidates))))
        # Filters apply after the HNSW scan; iterative scans keep going until enough rows pass.
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            sql.SQL("SELECT chunk_id, embedding <=> %s AS distance FROM {table} WHERE {where} "
                    "ORDER BY embedding <=> %s LIMIT %s").format(table=table, where=where),
            [vector, *params, vector, config.candidates],
        ).fetchall()
    # relaxed_order may return rows slightly out of order.
    return sorted(((chunk_id, 1 - distance) for chunk_id, distance in rows), key=lambda r: -r[1])


def _lexical_candidates(conn, table_name, query, where, params, config: SearchConfig):
    """BM25 over the version's full-text index: any query word may match, rarer words weigh more,
    and long chunks do not win by length alone."""
    table, lexicon = sql.Identifier(table_name), sql.Identifier(store.lexicon_table(table_name))
    rows = conn.execute(
        sql.SQL(
            """
            WITH q AS (SELECT to_tsquery('english', replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')) AS q),
                 terms AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))),
                 stats AS (SELECT rows::float AS n, avg_doc_lexemes AS avgdl FROM index_versions WHERE table_name = %s),
                 candidates AS (SELECT chunk_id, tsv FROM {table}, q WHERE tsv @@ q.q AND {where})
            SELECT c.chunk_id,
                   sum(ln(1 + (s.n - l.ndoc + 0.5) / (l.ndoc + 0.5))
                       * u.tf * ({k1} + 1) / (u.tf + {k1} * (1 - {b} + {b} * length(c.tsv) / s.avgdl))) AS score
            FROM candidates c
            CROSS JOIN stats s
            CROSS JOIN LATERAL (SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(c.tsv)) u
            JOIN terms t ON t.lexeme = u.lexeme
            JOIN {lexicon} l ON l.word = u.lexeme
            GROUP BY c.chunk_id
            ORDER BY score DESC, c.chunk_id
            LIMIT %s
            """
        ).format(table=table, where=where, lexicon=lexicon, k1=sql.Literal(config.bm25_k1), b=sql.Literal(config.bm25_b)),
        [query, query, table_name, *params, config.candidates],
    ).fetchall()
    return [(chunk_id, float(score)) for chunk_id, score in rows]


def _ranked_search(conn, table_name, query, k, filters: _Filters, version, config: SearchConfig, embedder) -> SearchResponse:
    ranked = _ranked(conn, table_name, query, filters, config, embedder)
    if config.return_parents:
        ranked = _parents_of(conn, table_name, ranked)
    ranked = ranked[:k]
    ids = [chunk_id for chunk_id, _ in ranked]
    rows = conn.execute(
        sql.SQL("SELECT {cols} FROM {table} WHERE chunk_id = ANY(%s)").format(
            cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), table=sql.Identifier(table_name)),
        [ids],
    ).fetchall()
    by_id = {row[0]: row for row in rows}
    return SearchResponse(
        query, config.mode, version,
        _rows_to_results([by_id[i] for i in ids], [score for _, score in ranked]),
    )


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
