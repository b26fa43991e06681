"""The lexical side of a search, one index with three implementations: BM25 over the chunks'
words, pericope titles the query names, and the citation counts of the prior. Which one answers
is chosen once per version and scope (choose()):

- `MirrorIndex`: the version's lexical mirror (lectio.index.mirror). Every chunk that holds a
  query word is scored in this process, and every title matched, exactly as the SQL does it; the
  best are confirmed under row-level security as the caller before any is returned.
- `PostingsIndex`: SQL over the version's BM25 postings (lectio.index.postings, index layout 7
  on): the best postings of each word, summed, and the best of those chunks scored in full.
- `ScanIndex`: SQL scoring every chunk that holds any query word (versions built before
  postings).

The mirror holds every chunk, private ones too. It reads only the postings of chunks whose ACL
shares a principal with the caller (so neither a private match nor the time spent on one reaches
anyone else) and narrows to the caller's filters before ranking, but it only proposes: the ids
are read back on the caller's connection, as the reader role with the caller's token and the
search's WHERE clause, and whatever that read drops is replaced from further down the ranking. The SQL implementations read on the caller's connection throughout.

BM25's terms are lectio.index.bm25's in every implementation: the mirror calls them on arrays,
and the SQL below is written out from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np
import psycopg
from psycopg import sql

from lectio.index import bm25, citations, mirror, postings, tables

if TYPE_CHECKING:  # annotations only: the retrievers this serves are part of every SearchConfig
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.request import VersionRequest

# The first read confirms exactly the candidates wanted: the mirror has already applied the caller's
# ACL and filters, so the read drops nothing unless the two disagree (measured on the full index:
# 1.0 ms for 100 ids, 1.4-1.7 ms for 200). Each further read goes this many times deeper.
_DEEPER = 2

# The query's words and their weights, as the SQL scoring takes them (_TERMS): a word of the query
# weighs 1, an expansion word `ew`, and a word in both counts once at the larger. Whether a word is
# the query's own: titles are matched by those alone.
_WORDS = """
    SELECT lexeme, max(w), bool_or(own) FROM (
        SELECT lexeme, 1.0::float8 AS w, true AS own FROM unnest(to_tsvector('english', %(query)s))
        UNION ALL
        SELECT lexeme, %(ew)s::float8, false FROM unnest(to_tsvector('english', %(extra)s))) t
    GROUP BY lexeme
"""


class Proposals(NamedTuple):
    """What the lexical side found, each list (chunk_id, score) best first and read under
    row-level security: BM25 over the chunks' words, and pericopes whose titles the query names."""

    words: list[tuple[str, float]]
    titles: list[tuple[str, float]]


class LexicalIndex(Protocol):
    """The lexical side of one version, over the rows one search may read."""

    rows: "Rows"  # what it reads in SQL, and confirms the mirror's proposals by

    def words(self, query: str, extra: str, config: SearchConfig) -> list[tuple[str, float]]:
        """BM25 over the chunks' words, at most `config.candidates`: any query word may match,
        rarer words weigh more, and long chunks do not win by length alone. Words of `extra`
        (the query's expansions) count at `config.expansion.weight`."""

    def titles(self, query: str, config: SearchConfig) -> list[tuple[str, float]]:
        """Pericopes whose title the query names, at most `config.candidates`: most of the title's
        words are in the query and at least `config.titles.query_share` of the query's words are in
        the title ("the Lord's Prayer", "crossing the Red Sea")."""

    def proposals(self, query: str, extra: str, config: SearchConfig) -> Proposals:
        """words() and, when `config.titles.weight` asks for them, titles()."""

    def cited(self, chunk_ids: list[str]) -> dict[str, int]:
        """chunk_id → citations of its most cited verse, for the scripture chunks among
        `chunk_ids` that have any (lectio.index.citations.most_cited's answer)."""


@dataclass(frozen=True)
class Rows:
    """The rows a search may read of a version, on the caller's connection: `where` and its
    `params` as lectio.retrieval.scope.Scope.where gives them; `layout` the version's
    INDEX_LAYOUT (lectio.index.tables)."""

    conn: psycopg.Connection
    table_name: str
    where: sql.Composable
    params: dict
    layout: int | None = None


def version_mirror(conn, info, config: SearchConfig) -> mirror.Mirror | None:
    """The version's lexical mirror, where a search under `config` ranks words with it (built once
    per version, read as the owner before the search turns reader); None to score in SQL."""
    return mirror.ensure(conn, info) if config.lexical.mirror and config.matches_words else None


def choose(request: VersionRequest, translation: str | None, others: bool = False,
           narrower: sql.Composable | None = None) -> LexicalIndex:
    """The lexical index of the rows the request's scope allows in `translation` (every other
    translation's, with `others`: Scope.conditions), narrowed by `narrower` where given: the
    version's mirror where the search has one that can apply the scope's conditions (not
    `narrower`), else its postings where it has them, else a scan. The one call that opens a
    version's lexical index."""
    conn, table_name, layout, scope, mirrored = (request.conn, request.table_name, request.layout, request.filters,
                                                 request.mirror)
    where, params = scope.where(translation, others)
    if narrower is not None:
        return _in_sql(Rows(conn, table_name, sql.SQL("{} AND {}").format(where, narrower), params, layout), None)
    rows = Rows(conn, table_name, where, params, layout)
    eligible = mirrored.mask(scope.conditions(translation, others)) if mirrored is not None else None
    if eligible is not None:
        return MirrorIndex(rows, mirrored, eligible, scope.corpus, mirrored.sets(scope.principals))
    # Postings carry only the default filters' columns; anything narrower is checked on the chunk.
    return _in_sql(rows, where if scope.on_postings else None)


def _in_sql(rows: Rows, posting_filter: sql.Composable | None) -> LexicalIndex:
    return PostingsIndex(rows, posting_filter) if tables.has_postings(rows.layout) else ScanIndex(rows)


# ---------------------------------------------------------------- the mirror


@dataclass(frozen=True)
class MirrorIndex:
    """The version's lexical mirror, narrowed to the chunks `eligible` marks; `corpus` is BM25's
    N and mean document length, as the SQL scoring gets them; `sets` the ACL sets the caller
    shares a principal with (Mirror.sets), the only postings read."""

    rows: Rows
    mirrored: mirror.Mirror
    eligible: np.ndarray
    corpus: tuple[float, float]
    sets: np.ndarray

    def words(self, query: str, extra: str, config: SearchConfig) -> list[tuple[str, float]]:
        return self.proposals(query, extra, config.with_settings({"titles.weight": 0.0})).words

    def titles(self, query: str, config: SearchConfig) -> list[tuple[str, float]]:
        own = {word for word, _, is_own in self._weights(query, "", config) if is_own}
        offers = [self._titles(own, config)] if own else []
        _confirm(self.rows, self.mirrored, offers)
        return offers[0].found if offers else []

    def proposals(self, query: str, extra: str, config: SearchConfig) -> Proposals:
        """Both in one read under row-level security."""
        words = self._weights(query, extra, config)
        scored = self.mirrored.scores({word: w for word, w, _ in words}, config.lexical.k1, config.lexical.b,
                                      *self.corpus, self.sets)
        offers = [_Offer(scored.within(self.eligible), config.candidates)]
        own = {word for word, _, is_own in words if is_own}
        if config.titles.weight and own:
            offers.append(self._titles(own, config))
        _confirm(self.rows, self.mirrored, offers)
        return Proposals(offers[0].found, offers[1].found if len(offers) > 1 else [])

    def cited(self, chunk_ids: list[str]) -> dict[str, int]:
        return self.mirrored.most_cited(chunk_ids)

    def _weights(self, query: str, extra: str, config: SearchConfig) -> list[tuple[str, float, bool]]:
        return self.rows.conn.execute(_WORDS, {"query": query, "extra": extra, "ew": config.expansion.weight}).fetchall()

    def _titles(self, own: set[str], config: SearchConfig) -> "_Offer":
        titles = self.mirrored.titles(own, config.titles.query_share, self.sets)
        return _Offer(titles.within(self.eligible), config.candidates)


@dataclass
class _Offer:
    """One ranking's proposals (the eligible chunks it reached) and how far down it they have been read."""

    scored: mirror.Scored
    wanted: int
    found: list[tuple[str, float]] = field(default_factory=list)
    checked: int = 0
    done: bool = False


def _confirm(rows: Rows, mirrored: mirror.Mirror, offers: list[_Offer]) -> None:
    """Fill each offer with its best `wanted` proposals that the caller's connection returns, in the
    mirror's order: one read for all offers, and further reads only for an offer that read drops
    some of."""
    statement = sql.SQL("SELECT chunk_id FROM {} WHERE chunk_id = ANY(%(mirror_ids)s) AND {}").format(
        sql.Identifier(rows.table_name), rows.where)
    while True:
        asked = []
        for offer in (offer for offer in offers if not offer.done):
            depth = offer.checked * _DEEPER if offer.checked else offer.wanted
            ranked = mirror.best(offer.scored, depth)
            offer.done = len(ranked.positions) <= offer.checked  # nothing left to offer
            if not offer.done:
                asked.append((offer, ranked, depth))
        if not asked:
            return
        proposed = list({mirrored.chunk_ids[i] for offer, ranked, _ in asked for i in ranked.positions[offer.checked:]})
        visible = {chunk_id for (chunk_id,) in rows.conn.execute(statement, {**rows.params, "mirror_ids": proposed})}
        for offer, ranked, depth in asked:
            fresh = zip(ranked.positions[offer.checked:], ranked.scores[offer.checked:])
            offer.found += [(mirrored.chunk_ids[i], float(score)) for i, score in fresh
                            if mirrored.chunk_ids[i] in visible][:offer.wanted - len(offer.found)]
            # Done when full, or when every eligible chunk has been offered.
            offer.done = len(offer.found) >= offer.wanted or len(ranked.positions) < depth
            offer.checked = len(ranked.positions)


# ---------------------------------------------------------------- SQL

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

# A query word's weight times its idf (a word no public chunk holds counts as in one chunk).
_WEIGHTED = str(bm25.Sql("t.w") * bm25.idf(bm25.Sql("s.n"), bm25.Sql("coalesce(l.ndoc, 1)"), bm25.ln))

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
        SELECT t.lexeme, """ + _WEIGHTED + """ AS wi
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
    SELECT c.chunk_id, sum({score}) AS score
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

_TITLES = """
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


def _score(config: SearchConfig) -> sql.SQL:
    """A candidate's BM25 term, as SQL, at the search's k1 and b."""
    norm = bm25.length_norm(bm25.Sql("length(c.tsv)"), bm25.Sql("s.avgdl"), config.lexical.k1, config.lexical.b)
    return sql.SQL(str(bm25.saturation(bm25.Sql("u.tf"), norm, config.lexical.k1, bm25.Sql(_WEIGHTED))))


@dataclass(frozen=True)
class _InSql:
    """What both SQL implementations read alike: titles, citations, and BM25's statement."""

    rows: Rows

    def titles(self, query: str, config: SearchConfig) -> list[tuple[str, float]]:
        rows = self.rows
        statement = sql.SQL(_TITLES).format(table=sql.Identifier(rows.table_name), where=rows.where,
                                            words=tables.title_words(rows.layout))
        found = rows.conn.execute(statement, {"query": query, **rows.params, "limit": config.candidates,
                                              "query_share": config.titles.query_share}).fetchall()
        return [(chunk_id, float(score)) for chunk_id, score in found]

    def proposals(self, query: str, extra: str, config: SearchConfig) -> Proposals:
        return Proposals(self.words(query, extra, config), self.titles(query, config) if config.titles.weight else [])

    def cited(self, chunk_ids: list[str]) -> dict[str, int]:
        return citations.most_cited(self.rows.conn, self.rows.table_name, chunk_ids, self.rows.layout)

    def _bm25(self, found: str, query: str, extra: str, config: SearchConfig,
              posting_filter: sql.Composable | None = None) -> list[tuple[str, float]]:
        """The BM25 candidates the CTE `found` proposes, scored in full."""
        rows = self.rows
        statement = sql.SQL("WITH " + _TERMS + "," + found + _SCORED).format(
            table=sql.Identifier(rows.table_name), where=rows.where, score=_score(config),
            lexicon=sql.Identifier(tables.lexicon_table(rows.table_name)),
            postings=sql.Identifier(postings.table_name(rows.table_name)), posting_filter=posting_filter or sql.SQL(""))
        values = {"query": query, "extra": extra, "ew": config.expansion.weight, "table": rows.table_name,
                  **rows.params, "limit": config.candidates, "depth": config.lexical.depth,
                  "rescored": config.lexical.rescored}
        return [(chunk_id, float(score)) for chunk_id, score in rows.conn.execute(statement, values).fetchall()]


@dataclass(frozen=True)
class ScanIndex(_InSql):
    """Every chunk that holds any query word, scored in SQL (versions built before postings)."""

    def words(self, query: str, extra: str, config: SearchConfig) -> list[tuple[str, float]]:
        return self._bm25(_MATCHING, query, extra, config)


@dataclass(frozen=True)
class PostingsIndex(_InSql):
    """The best postings of each query word (lectio.index.postings), the best of those chunks
    scored in SQL. `posting_filter` is the search's WHERE clause in the postings' own columns
    (lectio.index.postings.FILTER_COLUMNS), or None when the filters need the chunk."""

    posting_filter: sql.Composable | None = None

    def words(self, query: str, extra: str, config: SearchConfig) -> list[tuple[str, float]]:
        found = _BEST_POSTINGS.replace("{posting_filter}", _ON_CHUNK if self.posting_filter is None
                                       else "{posting_filter}")
        # The planner expects a word's postings to be a few hundred (the average word's) and sorts
        # them to sum them; a common word's run is thousands, which hashing sums in a tenth of the
        # time. Only for this statement (searches run in a transaction, so the setting is local).
        self.rows.conn.execute("SELECT set_config('enable_sort', 'off', true)")
        ranked = self._bm25(found, query, extra, config, self.posting_filter)
        self.rows.conn.execute("SELECT set_config('enable_sort', 'on', true)")
        return ranked
