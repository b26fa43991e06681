"""The evidence of the other kinds: a hybrid search narrowed to scripture also hears the commentary,
confessions and notes the caller may read. The same search without the kind filter is ranked too
(lectio.retrieval.ranking reads it and hands its list in), and each of its first hits speaks for
the scripture passage that best matches its verses. Read as the same caller, so only rows the
caller may read speak."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from lectio.bible.refs import Ref, UnknownReference
from lectio.retrieval import spans
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.retriever import GIVEN, Declared, Proposals, Ranking
from lectio.retrieval.stage import Setting

if TYPE_CHECKING:
    from lectio.retrieval.request import VersionRequest


@dataclass(frozen=True)
class EvidenceSettings:
    """A search narrowed to scripture still hears the other kinds the caller may read: a
    commentary, confession or note that answers the query speaks for the scripture it is filed
    under. The same search without the kind filter is ranked too; its first `depth` hits, each
    given as the scripture chunk that best matches its verses (covered_passages; a hit on more
    than `max_verses` verses is about too much to speak for any), are fused with the filtered
    ranking, weighing `weight`. 0 turns it off."""

    # Asked with `kind: scripture`, theology's dev recall@20 was .022 below the same queries
    # unfiltered (.009 with the evidence): the unfiltered page covered relevant verses through
    # commentary on them, which a filtered page cannot show. Weight 1 (what the vector and BM25
    # lists weigh) and the first 20 hits (a page of the sets' depth) were taken as they stand, not
    # tuned; docs/results.md has the dev figures.
    weight: float = 1.0
    depth: int = 20
    max_verses: int = 20
    # How far down the unfiltered page the evidence reads to find its `depth` hits that carry
    # verse references: a confession's or catechism's own answer, a document, carries none and
    # speaks for no passage, yet took a slot of the first 20.
    reads: int = 20


class Evidence(Declared):
    """The passages the unfiltered first page speaks for, where the search is narrowed to scripture."""

    name: ClassVar[str] = "evidence"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("evidence", EvidenceSettings),)
    modes: ClassVar[frozenset[str]] = HYBRID_ONLY
    reads: ClassVar[str] = GIVEN


    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen=None) -> Ranking | None:
        return found.listed(cls.name)  # handed in by the ranking that read the unfiltered search

    @classmethod
    def asked(cls, request: VersionRequest) -> bool:
        """Whether the search hears the other kinds: narrowed to scripture, in a mode it serves."""
        config = request.config
        return bool(config.evidence.weight) and request.filters.given.kind == "scripture" and config.mode in cls.modes


def covered_passages(conn, table_name, page: list[tuple[str, list[str], float]], where, params,
                     max_verses: int) -> list[tuple[str, float]]:
    """Each hit of `page` (chunk_id, refs, score, as read for the caller) given as the chunk
    `where` admits whose verses best match its own, at its score and in its order: a commentary on
    Matthew 11:28-30 speaks for the paragraph of those verses. Best is the most verses shared over
    all that either holds, then the fewest verses, then the id; a chunk `where` admits is itself.
    One of no verses, or of more than `max_verses`, drops out; a passage spoken for twice keeps
    its first place."""
    page = [(chunk_id, set(refs), score) for chunk_id, refs, score in page if 1 <= len(refs or ()) <= max_verses]
    runs = sorted({span for _, verses, _ in page for span in _spans(verses)})
    if not runs:
        return []
    # The passages that may share a verse with a hit: those starting from the chapter before one
    # of its runs of verses to the run's end. Read by ordinal, whose index row-level security lets
    # the planner use (an overlap of refs is no leakproof test, so it would read every row the
    # caller may).
    within, span_params = spans.ordinal_spans(runs)
    passages = [(chunk_id, set(refs)) for chunk_id, refs in conn.execute(
        sql.SQL("SELECT chunk_id, refs FROM {table} WHERE ({within}) AND {where}").format(
            table=sql.Identifier(table_name), within=within, where=where), {**params, **span_params}).fetchall()]
    spoken: dict[str, float] = {}
    for chunk_id, verses, score in page:
        matching = [(other, refs) for other, refs in passages if verses & refs]
        if matching:
            best = min(matching, key=lambda item: (item[0] != chunk_id, -_jaccard(verses, item[1]), len(item[1]),
                                                   item[0]))[0]
            spoken.setdefault(best, score)
    return list(spoken.items())


def _jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b)


def _spans(refs) -> list[tuple[int, int]]:
    """The ordinals a passage sharing a verse with `refs` starts within, one span per run of
    verses in neighbouring chapters of a book: a confession's proof texts in Genesis and Romans
    are two short spans, not the Bible between them. No span for refs that name no verse."""
    try:
        verses = sorted(Ref.from_id(ref) for ref in refs)
    except (ValueError, UnknownReference):
        return []
    runs: list[list[Ref]] = []
    for verse in verses:
        if runs and runs[-1][-1].book == verse.book and verse.chapter - runs[-1][-1].chapter <= 1:
            runs[-1].append(verse)
        else:
            runs.append([verse])
    return [(run[0].ordinal - run[0].verse - 1_000, run[-1].ordinal) for run in runs]
