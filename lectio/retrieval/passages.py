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
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from lectio.retrieval import spans
from lectio.retrieval.modes import EMBEDDING_MODES
from lectio.retrieval.retriever import LISTS, Declared, Proposals, Ranking
from lectio.retrieval.stage import Setting

if TYPE_CHECKING:
    from lectio.retrieval.request import VersionRequest

# An ordinal is BBCCCVVV: its chapter is the ordinal without its last three digits.
_CHAPTER = 1000


@dataclass(frozen=True)
class PassageSettings:
    """The passage around the verse (lectio.retrieval.passages): the first `candidates` vector
    hits (each on at most `max_verses` verses) vote for their chapters, and the verses of the best
    `chapters` chapters, each scored by its cosine plus `boost` times its chapter's share of the
    best vote, are fused as one more list weighing `weight` (0: off)."""

    weight: float = 0.0
    candidates: int = 30
    chapters: int = 5
    boost: float = 0.1
    max_verses: int = 20


class Passages(Declared):
    """The verses of the chapters the vector candidates crowd into."""

    name: ClassVar[str] = "passages"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("passages", PassageSettings),)
    modes: ClassVar[frozenset[str]] = EMBEDDING_MODES
    reads: ClassVar[str] = LISTS


    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen=None) -> Ranking | None:
        if not request.config.passages.weight or found.vector is None or not found.listed("vector"):
            return None
        return chapter_verses(request, found)


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
    """The verses of the chapters the vector candidates of `found` vote for most, best first."""
    settings = request.config.passages
    votes = chapter_votes(request, found.listed("vector"))
    if not votes:
        return []
    best = sorted(votes.items(), key=lambda item: -item[1])[: settings.chapters]
    top = best[0][1] or 1.0  # every vote 0: no chapter stands out
    within, span_params = spans.ordinal_spans([(key * _CHAPTER, key * _CHAPTER + _CHAPTER - 1) for key, _ in best])
    rows = request.conn.execute(
        sql.SQL("SELECT chunk_id, ordinal, 1 - (embedding <=> %(v)s) FROM {table} "
                "WHERE granularity = 'verse' AND ({within}) AND {where}").format(
            table=sql.Identifier(request.table_name), within=within, where=found.where),
        {"v": found.vector, **found.params, **span_params}).fetchall()
    share = {key: vote / top for key, vote in best}
    scored = [(chunk_id, float(similarity) + settings.boost * share[ordinal // _CHAPTER])
              for chunk_id, ordinal, similarity in rows]
    return sorted(scored, key=lambda item: -item[1])[: request.config.candidates]
