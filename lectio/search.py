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
EF_SEARCH = 100

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
    mode: str  # "reference" or "vector"
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
) -> SearchResponse:
    version = version or store.live_version(conn)
    if version is None:
        return SearchResponse(query, "none", None, message="no live index yet: run `lectio run` first")
    info = store.get_version(conn, version)
    if info is None or info.status != "ready":
        return SearchResponse(query, "none", version, message=f"index version {version!r} is not ready")
    table = sql.Identifier(info.table_name)
    filters = _Filters(principals, kind, translation)
    try:
        ranges = parse_reference(query)
    except UnknownReference as exc:
        return SearchResponse(query, "reference", version, message=str(exc))
    if ranges:
        return _lookup(conn, table, query, ranges, k, filters, version)
    return _vector(conn, table, query, k, filters, version, embedder or Embedder())


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


def _vector(conn, table, query, k, filters: _Filters, version, embedder: Embedder) -> SearchResponse:
    vector = embedder.encode([query])[0]
    where, params = filters.where(filters.translation or DEFAULT_TRANSLATION)
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(EF_SEARCH)))
        # Filters apply after the HNSW scan; iterative scans keep going until k rows pass them.
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            sql.SQL("SELECT {cols}, embedding <=> %s AS distance FROM {table} WHERE {where} "
                    "ORDER BY embedding <=> %s LIMIT %s").format(
                cols=sql.SQL(", ").join(map(sql.Identifier, _COLUMNS)), table=table, where=where),
            [vector, *params, vector, k],
        ).fetchall()
    # relaxed_order may return rows slightly out of order.
    rows.sort(key=lambda row: row[-1])
    return SearchResponse(query, "vector", version, _rows_to_results([r[:-1] for r in rows], [1 - r[-1] for r in rows]))
