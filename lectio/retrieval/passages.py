"""The passage around the verse: the chapters the vector side's candidates crowd into, and their
verses as one more list (hierarchical relevance, as a chapter-level baseline wins it, without
returning whole chapters).

A question's answer is often a verse whose own words say little alone but whose chapter is about
the question: Job 32:8 answers "Is man a reasonable creature?" in Elihu's speech on understanding.
The vector candidates vote for chapters (each hit's cosine summed over the chapters of its
verses, the first `candidates` hits), and the verses of the best `chapters` chapters are ranked by
their own cosine plus `boost` times their chapter's share of the best chapter's vote. Read as the
caller, through the search's filters, so no verse the caller may not read is proposed."""

from __future__ import annotations

from collections import defaultdict

from psycopg import sql

from lectio.retrieval import candidates
from lectio.retrieval.request import VersionRequest

Ranking = list[tuple[str, float]]
# An ordinal is BBCCCVVV: its chapter is the ordinal without its last three digits.
_CHAPTER = 1000


def wanted(request: VersionRequest, found) -> bool:
    return bool(request.config.passages.weight) and found.vector is not None and bool(found.near)


def chapter_votes(request: VersionRequest, near: Ranking) -> dict[int, float]:
    """Each chapter (book * 1000 + chapter, as ordinals write it) the first vector hits fall in, with
    the sum of their cosines."""
    settings = request.config.passages
    head = dict(near[: settings.candidates])
    rows = request.conn.execute(
        sql.SQL("SELECT chunk_id, ordinal, refs FROM {} WHERE chunk_id = ANY(%s)").format(
            sql.Identifier(request.table_name)), [list(head)]).fetchall()
    votes: dict[int, float] = defaultdict(float)
    for chunk_id, ordinal, refs in rows:
        if ordinal is None or not refs or len(refs) > settings.max_verses:
            continue
        votes[ordinal // _CHAPTER] += max(head[chunk_id], 0.0)
    return votes


def chapter_verses(request: VersionRequest, found) -> Ranking:
    """The verses of the chapters the vector candidates of `found` (lectio.retrieval.proposals.
    Proposals) vote for most, best first."""
    settings = request.config.passages
    votes = chapter_votes(request, found.near)
    if not votes:
        return []
    best = sorted(votes.items(), key=lambda item: -item[1])[: settings.chapters]
    top = best[0][1] or 1.0  # every vote 0: no chapter stands out
    within, span_params = candidates.ordinal_spans([(key * _CHAPTER, key * _CHAPTER + _CHAPTER - 1) for key, _ in best])
    rows = request.conn.execute(
        sql.SQL("SELECT chunk_id, ordinal, 1 - (embedding <=> %(v)s) FROM {table} "
                "WHERE granularity = 'verse' AND ({within}) AND {where}").format(
            table=sql.Identifier(request.table_name), within=within, where=found.where),
        {"v": found.vector, **found.params, **span_params}).fetchall()
    share = {key: vote / top for key, vote in best}
    scored = [(chunk_id, float(similarity) + settings.boost * share[ordinal // _CHAPTER])
              for chunk_id, ordinal, similarity in rows]
    return sorted(scored, key=lambda item: -item[1])[: request.config.candidates]
