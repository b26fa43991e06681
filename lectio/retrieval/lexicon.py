"""A word study's answer: the lexicon entries the word names (exact, then fuzzy, then by meaning),
then the verses the WEB tags with their Strong's numbers."""

from __future__ import annotations

import re
from dataclasses import replace

from psycopg import sql

from lectio.retrieval import fusion, threads, word_study
from lectio.retrieval.filters import Filters
from lectio.retrieval.hits import hits_by_id
from lectio.retrieval.request import DEFAULT_TRANSLATION, VersionRequest
from lectio.retrieval.response import SearchResponse, results
from lectio.rulesets.strongs import plain_letters


def study(request: VersionRequest, word: word_study.WordQuery) -> SearchResponse | None:
    """The lexicon entry (exact, then fuzzy, then by meaning), then the WEB verses tagged with its
    Strong's number. None when a bare word turns out to be no transliteration: an ordinary search
    answers it instead."""
    conn, table_name, query, k, version = request.conn, request.table_name, request.query, request.k, request.version
    filters = request.filters
    entries = _lexicon_entries(request, word)
    if not entries:
        if word.how == "number":
            return SearchResponse(query, "word-study", version, message=f"no Strong's entry for {word.term!r} is in the index")
        return None
    table = sql.Identifier(table_name)
    numbers = list(dict.fromkeys(number for _, number in entries))
    where, params = filters.where(request.translation)
    # The query's words besides a number or Greek/Hebrew script ("G26 in John's letters", "the
    # Greek word for love") order the verses by meaning; a bare number or word lists them in
    # canonical order.
    rest = _NUMBER_OR_SCRIPT.sub(" ", query).strip()
    order = sql.SQL("ordinal")
    query_params: dict = {}
    if len(rest.split()) >= 2:
        order = sql.SQL("embedding <=> %(v)s")
        query_params = {"v": threads.embedding().submit(request.embedder.encode, [rest]).result()[0]}
    # Materialised so the planner filters by number first: an HNSW scan ordered by the query
    # would see only its nearest few hundred verses and could return fewer than k.
    verses = conn.execute(
        sql.SQL("WITH tagged AS MATERIALIZED (SELECT chunk_id, ordinal, embedding FROM {table} "
                "WHERE granularity = 'verse' AND (metadata -> 'strongs') ?| %(numbers)s AND {where}) "
                "SELECT chunk_id FROM tagged ORDER BY {order} LIMIT %(k)s").format(table=table, where=where, order=order),
        {"numbers": numbers, **params, **query_params, "k": k},
    ).fetchall()
    ids = [chunk_id for chunk_id, _ in entries] + [chunk_id for (chunk_id,) in verses]
    hits = hits_by_id(conn, table_name, [(chunk_id, 1.0) for chunk_id in ids[:k]])
    return SearchResponse(query, "word-study", version, results(hits))


_NUMBER_OR_SCRIPT = re.compile(r"\b(?:strong'?s\s+)?[GH]\d{1,5}\b|[\u0370-\u03ff\u1f00-\u1fff\u0590-\u05ff]+", re.IGNORECASE)


def _lexicon_entries(request: VersionRequest, word: word_study.WordQuery) -> list[tuple[str, str]]:
    """(chunk_id, Strong's number) of the entries the word names, best first."""
    conn, table = request.conn, sql.Identifier(request.table_name)
    # The caller's testament, genre or tradition filters narrow the verses, not the dictionary.
    lexicon = replace(request.filters, given=Filters(kind="lexicon"))
    where, params = lexicon.where(None)
    language = sql.SQL("TRUE")
    if word.language:
        language = sql.SQL("metadata ->> 'language' = %(language)s")
        params = {**params, "language": word.language}

    def matching(condition: str, order: str = "chunk_id", **values) -> list[tuple[str, str]]:
        # The entries are found first (through the dictionary's own indexes) and then ordered: a
        # plan that walks every chunk in `order` hoping to meet three soon reads them all when the
        # word is no dictionary word, as most short queries are not.
        return conn.execute(
            sql.SQL("WITH found AS MATERIALIZED (SELECT chunk_id, metadata FROM {table} WHERE kind = 'lexicon' "
                    "AND {language} AND {where} AND {condition}) "
                    "SELECT chunk_id, metadata ->> 'strongs' FROM found ORDER BY {order} LIMIT 3").format(
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
    ranked = fusion.ranked(replace(
        request, query=word.term, filters=lexicon, vector_conn=None,
        # The word asked about, not its theological neighbours: "grace" must find charis, not
        # the words for mercy the expansion would add.
        config=request.config.with_settings({"xrefs.weight": 0, "titles.weight": 0, "lexical.expand": False,
                                             "vector.expand": False})))
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
