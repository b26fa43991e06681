"""What the retrievers propose for one query, before fusion (lectio.retrieval.retrievers lists
them): first those that read the query, the one that embeds it beside the lexical side, then
those that read the others' lists."""

from __future__ import annotations

from concurrent.futures import wait
from dataclasses import replace

from psycopg import sql

from lectio.index import security
from lectio.retrieval import lexical, retrievers, threads
from lectio.retrieval.expansion import expansion_words
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.retriever import LISTS, QUERY, Proposals


def proposals(request: VersionRequest, rows: sql.Composable | None = None, vector=None) -> Proposals:
    """Each retriever's list; `rows` narrows the rows ranked; `vector` is the query's embedding
    where it is already made. The retrievers that run beside (the vector side) run on the
    request's `vector_conn` where there is one, while the others read on `conn`."""
    config = request.config
    chosen = retrievers.serving(config.mode)
    # The mirror ranks every matching chunk; SQL where there is none, or rows it cannot narrow to.
    index = lexical.choose(request, request.translation, narrower=rows)
    extra = expansion_words(request.query, config.expansion) if config.lexical.expand or config.vector.expand else ""
    found = Proposals(vector, index.rows.where, index.rows.params, index, extra, narrowed=rows is not None)
    beside = [r for r in chosen if r.reads == QUERY and r.beside]
    side = None
    if beside:
        # The model embeds the query (and a second connection reads its neighbours) while the
        # database answers the lexical side: each waits on its own core, not one after the other.
        side = threads.embedding().submit(_beside, request, found, beside)
    try:
        _propose(request, found, [r for r in chosen if r.reads == QUERY and not r.beside])
    finally:
        if side is not None:
            wait([side])  # the second connection is the caller's again only once its reads are done
    if side is not None:
        found.vector, lists = side.result()
        if lists is None:  # no second connection: they read on this one, now the vector is made
            _propose(request, found, beside)
        else:
            found.lists.update(lists)
    _propose(request, found, [r for r in chosen if r.reads == LISTS])
    return found


def _propose(request: VersionRequest, found: Proposals, chosen) -> None:
    for retriever in chosen:
        listed = retriever.propose(request, found)
        if listed is not None:
            found.lists[retriever.name] = listed


def _beside(request: VersionRequest, found: Proposals, beside) -> tuple[object, dict | None]:
    """The query's vector (`found.vector` where it is already embedded) and, on the request's
    `vector_conn` (a connection of its own; None where there is none), the lists of the
    retrievers `beside`, read as the same principals as the rest of the search."""
    vector = found.vector
    if vector is None:
        said = request.embedded or request.query
        text = f"{said} {found.extra}" if request.config.vector.expand and found.extra else said
        vector = request.embedder.encode([text])[0]
    if request.vector_conn is None:
        return vector, None
    there = replace(request, conn=request.vector_conn, vector_conn=None)
    seen = replace(found, vector=vector, lists={}, shared={})
    with there.conn.transaction():
        security.act_as_reader(there.conn, request.filters.principals)
        _propose(there, seen, beside)
    return vector, seen.lists
