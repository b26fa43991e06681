"""The other translations' retriever: a one-word topic is often a word of another translation's
vocabulary ("plummet" and "moderation" are the KJV's alone; the WEB says "plumb line" and
"gentleness"), and many readers' words are the KJV's. BM25 over the other translations' scripture
proposes, for a topic fused again, the chunk of the same verses in the search's translation."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from lectio.retrieval import lexical
from lectio.retrieval.expansion import expansion_words
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.retriever import Declared, Proposals, Ranking
from lectio.retrieval.topics import fused_again

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.request import VersionRequest


class OtherTranslations(Declared):
    """BM25 over the other translations' scripture, for a topic fused again: the verse whose word
    the search's translation renders otherwise. Its weight is the topic's (TopicSettings)."""

    name: ClassVar[str] = "other_translations"
    modes: ClassVar[frozenset[str]] = HYBRID_ONLY

    @classmethod
    def weight(cls, config: SearchConfig, topic: bool) -> float:
        return config.topics.other_translations_weight if topic else 0.0

    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen=None) -> Ranking | None:
        config = request.config
        if found.narrowed or not config.topics.other_translations_weight:
            return None
        if not fused_again(request):
            return None
        return other_translations(request, request.translation)


def other_translations(request: VersionRequest, translation: str) -> list[tuple[str, float]]:
    """BM25 over the scripture of every translation but `translation`, each hit given as the chunk
    of the same verses in `translation` (twins): the verse whose word `translation`
    renders otherwise. Read as the caller, from the mirror where it can, else in SQL."""
    conn, table_name, query, config = request.conn, request.table_name, request.query, request.config
    extra = expansion_words(query, config.expansion) if config.lexical.expand else ""
    ranked = lexical.choose(request, translation, others=True).words(query, extra, config)
    return twins(conn, table_name, ranked, *request.filters.where(translation))


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
