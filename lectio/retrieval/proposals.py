"""What each retriever proposes for one query, before fusion: the HNSW neighbours of its
embedding, BM25 (with the translations' renderings as expansion), pericope titles, and for a
topic the other translations' BM25. The vector side runs beside the lexical side."""

from __future__ import annotations

from concurrent.futures import wait
from dataclasses import dataclass

from psycopg import sql

from lectio.index import security
from lectio.retrieval import candidates, lexical, passages, threads, topics
from lectio.retrieval.expansion import derived_forms, expansion_words
from lectio.retrieval.request import VersionRequest


@dataclass
class Proposals:
    """What each retriever proposed for one query, before fusion: fusing them again under other
    weights reads nothing twice."""

    vector: object  # the query's embedding (None in lexical mode)
    near: list[tuple[str, float]] | None  # HNSW neighbours; None where the vector side did not run
    words: list[tuple[str, float]] | None  # BM25; None where the lexical side did not run
    titles: list[tuple[str, float]] | None  # pericope titles, where the lexical side ran with titles on
    where: sql.Composable
    params: list
    index: lexical.LexicalIndex  # the lexical side's, which the citation prior reads too
    # The other translations' BM25 as this translation's chunks; read for a topic-shaped query only.
    others: list[tuple[str, float]] | None = None
    # The HNSW neighbours of the query's vector moved toward its first hits (lectio.retrieval.
    # feedback); None where feedback did not run.
    feedback: list[tuple[str, float]] | None = None
    # The rows of `feedback` this search's filters leave out: a filtered search walks as the
    # unfiltered one does, so each row it keeps weighs in fusion as it does there.
    feedback_outside: frozenset[str] = frozenset()
    # The verses of the chapters the vector candidates crowd into (lectio.retrieval.passages);
    # None where that list is off.
    passages: list[tuple[str, float]] | None = None


def proposals(request: VersionRequest, rows: sql.Composable | None = None, vector=None) -> Proposals:
    """Each retriever's candidates; `rows` narrows the rows ranked; `vector` is the query's
    embedding where it is already made. The vector side runs on the request's `vector_conn` where
    there is one, beside the lexical side."""
    conn, table_name, query, filters = request.conn, request.table_name, request.query, request.filters
    config, translation = request.config, request.translation
    # The mirror ranks every matching chunk; SQL where there is none, or rows it cannot narrow to.
    index = lexical.choose(request, translation, narrower=rows)
    where, params = index.rows.where, index.rows.params
    extra = expansion_words(query, config.expansion) if config.lexical.expand or config.vector.expand else ""
    side = near = words = titles = others = None
    if config.embeds:
        # The model embeds the query (and a second connection reads its neighbours) while the
        # database answers the lexical side: each waits on its own core, not one after the other.
        said = request.embedded or query
        text = f"{said} {extra}" if config.vector.expand and extra else said
        side = threads.embedding().submit(_vector_side, request, text, where, params, vector)
    try:
        if config.matches_words:
            # The query's words as BM25 matches them: with the derivations the stemmer keeps apart.
            own = " ".join([query, *derived_forms(query)]) if config.lexical.derived else query
            found = index.proposals(own, extra if config.lexical.expand else "", config)
            words, titles = found.words, found.titles if config.titles.weight else None
        if rows is None and config.topics.other_translations_weight and topics.fused_again(query, config, filters):
            # Read while the vector side still walks the graph: a topic's is the longer walk.
            others = topics.other_translations(request, translation)
    finally:
        if side is not None:
            wait([side])  # the second connection is the caller's again only once its reads are done
    vector = None
    if side is not None:
        vector, near = side.result()
        if near is None:
            near = candidates.vector_candidates(conn, table_name, vector, where, params, config)
    found = Proposals(vector, near, words, titles, where, params, index, others)
    if passages.wanted(request, found):
        found.passages = passages.chapter_verses(request, found)
    return found


def _vector_side(request: VersionRequest, text: str, where, params, vector=None):
    """The query's vector (`vector` where it is already embedded) and, on the request's
    `vector_conn` (a connection of its own, None for none), its HNSW candidates, read as the same
    principals as the rest of the search."""
    if vector is None:
        vector = request.embedder.encode([text])[0]
    conn = request.vector_conn
    if conn is None:
        return vector, None
    with conn.transaction():
        security.act_as_reader(conn, request.filters.principals)
        return vector, candidates.vector_candidates(conn, request.table_name, vector, where, params, request.config)
