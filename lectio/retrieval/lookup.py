"""A reference's answer: the verses of the ranges it names, in canonical order, the preferred
translation first (another where the preferred one holds none of them)."""

from __future__ import annotations

from psycopg import sql

from lectio.bible.refs import RefRange
from lectio.retrieval import spans
from lectio.retrieval.filters import Filters
from lectio.retrieval.hits import SELECT_COLUMNS, Hit
from lectio.retrieval.request import DEFAULT_TRANSLATION, VersionRequest
from lectio.retrieval.response import SearchResponse, results
from lectio.retrieval.scope import Scope


def lookup(request: VersionRequest, ranges: list[RefRange]) -> SearchResponse:
    """Verses of the referenced ranges in canonical order (the preferred translation first)."""
    conn, query, filters, version = request.conn, request.query, request.filters, request.version
    span, span_params = spans.ordinal_spans([(r.start_ordinal, r.end_ordinal) for r in ranges])
    for translation in _translation_preference(request):
        where, params = filters.where(translation)
        rows = conn.execute(
            sql.SQL("SELECT {cols} FROM {table} WHERE granularity = 'verse' AND ({span}) AND {where} "
                    "ORDER BY ordinal, translation LIMIT %(k)s").format(
                cols=SELECT_COLUMNS, table=sql.Identifier(request.table_name), span=span, where=where),
            {**span_params, **params, "k": request.k},
        ).fetchall()
        if rows:
            return SearchResponse(query, "reference", version, results([Hit.of_row(row, 1.0) for row in rows]))
    labels = "; ".join(r.label for r in ranges)
    return SearchResponse(query, "reference", version, message=_none_found(request, labels, span, span_params))


def _none_found(request: VersionRequest, labels: str, span: sql.Composable, span_params: dict) -> str:
    """Why the reference found no verse: the index holds none the caller may see, or the caller's
    filters left out every one it holds (`--kind notes` on a reference, whose verses are
    scripture), said as such rather than as verses missing from the index. Asked as the caller:
    only verses the caller may see count."""
    given = request.filters.given.given()
    if not given:
        return f"no verses of {labels} are in the index"
    where, params = Scope(request.filters.principals, Filters()).where(None)
    held = request.conn.execute(
        sql.SQL("SELECT 1 FROM {table} WHERE granularity = 'verse' AND ({span}) AND {where} LIMIT 1").format(
            table=sql.Identifier(request.table_name), span=span, where=where),
        {**span_params, **params}).fetchone()
    if held is None:
        return f"no verses of {labels} are in the index"
    named = ", ".join(f"{name} {value}" for name, value in given.items())
    kind = given.get("kind")
    why = f": a verse's kind is scripture, not {kind}" if kind and kind != "scripture" else ""
    return f"the index holds {labels}, but the filters ({named}) leave out every verse of it{why}"


def _translation_preference(request: VersionRequest) -> list[str | None]:
    """The caller's translation alone; else the preferred one, then any."""
    if request.filters.translation:
        return [request.filters.translation]
    return [DEFAULT_TRANSLATION, None]
