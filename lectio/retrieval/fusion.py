"""The retrievers' proposals fused into one ranking by reciprocal rank fusion (weighing scores in
the hybrid), with the retrievers that read the fused order (the cross-reference graph) and the
citation prior; a one-word topic fused again with its words weighing more (lectio.retrieval.
topics); the retrievers that read the first page (feedback) asked once it is ranked."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

from psycopg import sql

from lectio.retrieval import retrievers, topics
from lectio.retrieval.hits import hits_by_id
from lectio.retrieval.proposals import proposals
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.retriever import FUSED, PAGE, Proposals, Ranking
from lectio.retrieval.signals import Fused, Signals

# The unfiltered ranking feedback reads where a filter narrows the search, given the query's
# embedding; asked for only where a retriever reads the first page.
FirstPage = Callable[[object], Ranking]


def ranked(request: VersionRequest, rows: sql.Composable | None = None) -> Ranking:
    """Every retriever the search's mode takes, fused; `rows` narrows the rows ranked."""
    return fused(request, proposals(request, rows))


def ranking(request: VersionRequest, vector=None, evidence: Ranking | None = None,
            first: FirstPage | None = None) -> tuple[Ranking, object]:
    """The fused ranking (with `evidence`, where given), a topic's fused again, and the query's
    embedding (`vector` where it was already made). The retrievers that read the first page read
    the first hits of `first` (the unfiltered ranking of the same query), else of this ranking
    before they joined it."""
    found = proposals(request, vector=vector)
    return ranked_with_page(request, found, evidence, first), found.vector


def ranked_with_page(request: VersionRequest, found: Proposals, evidence: Ranking | None,
                     first: FirstPage | None = None) -> Ranking:
    """`ranked_from`, and again with the lists of the retrievers that read the first page, where
    any proposes one."""
    order = ranked_from(request, found, evidence)
    readers = [r for r in retrievers.serving(request.config.mode) if r.reads == PAGE]
    if not readers:
        return order
    page = (lambda: order) if first is None else (lambda: first(found.vector))
    lists = {}
    for retriever in readers:
        listed = retriever.propose(request, found, page)
        if listed is not None:
            lists[retriever.name] = listed
    if not lists:
        return order
    return ranked_from(request, replace(found, lists={**found.lists, **lists}), evidence)


def ranked_from(request: VersionRequest, found: Proposals, evidence: Ranking | None) -> Ranking:
    """The proposals `found` fused (with `evidence`, where given), a topic's fused again."""
    config = request.config
    if evidence is not None:
        found = replace(found, lists={**found.lists, "evidence": evidence})
    order = fused(request, found)
    if _is_topic(request, order):
        if config.topics.rows != "all":
            again = proposals(request, topics.TOPIC_ROWS[config.topics.rows], found.vector)
            if evidence is not None:
                again.lists["evidence"] = evidence
            order = fused(request, again, topic=True)
        else:
            order = fused(request, found, topic=True)
    return order


def fused(request: VersionRequest, found: Proposals, topic: bool = False) -> Fused:
    """The lists of `found` fused, each at the weight its retriever gives it (a topic's second
    fusion where `topic`); then the retrievers that read the fused order, fused again with it;
    in a hybrid, the citation prior."""
    config = request.config
    chosen = retrievers.serving(config.mode)
    # In RETRIEVERS' order, as fusion has always taken them: ties keep that order.
    named = [(r.name, weight, found.lists[r.name]) for r in chosen
             if r.reads != FUSED and r.name in found.lists and (weight := r.weight(config, topic))]
    # Scores weigh in the hybrid only: vector and lexical stay the plain baselines they are.
    power = config.fusion.score_power if config.hybrid else 0.0
    together = _fuse(named, config.fusion.rrf_k, power)
    for retriever in (r for r in chosen if r.reads == FUSED):
        weight = retriever.weight(config, topic)
        linked = retriever.propose(request, found, together) if weight else None
        if linked:
            named.append((retriever.name, weight, linked))
            together = _fuse(named, config.fusion.rrf_k, power)
    if config.hybrid and config.fusion.prominence_weight:
        together = weigh_prominence(together, config.fusion.prominence_weight, found.index.cited)
    return Fused(together, Signals(tuple((name, listed) for name, _, listed in named), found.vector, found.index.cited))


def _fuse(named: list[tuple[str, float, Ranking]], rrf_k: int, power: float) -> Ranking:
    """The lists fused (one list alone as it is), without the rows any list walked beyond the
    search's filters (lectio.retrieval.retriever.Unfiltered)."""
    lists = [(weight, listed) for _, weight, listed in named]
    together = fuse(lists, rrf_k, power) if len(lists) > 1 else (list(lists[0][1]) if lists else [])
    outside = frozenset().union(*(getattr(listed, "outside", ()) for _, listed in lists))
    return [hit for hit in together if hit[0] not in outside] if outside else together


def _is_topic(request: VersionRequest, order: Ranking) -> bool:
    """A short query that names no passage: its best hit is not a whole pericope."""
    if not order or not topics.takes_topic_path(request):
        return False
    best = hits_by_id(request.conn, request.table_name, order[:1])
    return bool(best) and best[0].granularity != "pericope"


def weigh_prominence(fused: list[tuple[str, float]], weight: float,
                     cited: Callable[[list[str]], dict[str, int]]) -> list[tuple[str, float]]:
    """`fused` weighed by the citation prior; `cited` counts the citations of chunks (the
    lexical index's, lectio.retrieval.lexical.LexicalIndex.cited)."""
    counts = cited([chunk_id for chunk_id, _ in fused])
    weighed = [(chunk_id, score * (1 + weight * math.log1p(counts.get(chunk_id, 0)))) for chunk_id, score in fused]
    return sorted(weighed, key=lambda item: -item[1])


def fuse(lists: list[tuple[float, list[tuple[str, float]]]], rrf_k: int,
         score_power: float = 0.0) -> list[tuple[str, float]]:
    """Reciprocal rank fusion, each list's share scaled by (score / the list's best score) **
    `score_power`. Ranks alone throw away how far apart the scores are: a quoted verse at cosine
    0.99 with the next at 0.58 counts no more than first of a close field, and weaker signals
    outvote it. At 0 this is plain RRF; a close field (ratios near 1) fuses as by ranks."""
    fused: dict[str, float] = {}
    for weight, ranked in lists:
        best = ranked[0][1] if ranked else 0.0
        for rank, (chunk_id, score) in enumerate(ranked, start=1):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weight * _strength(score, best, score_power) / (rrf_k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def _strength(score: float, best: float, power: float) -> float:
    if not power or best <= 0:
        return 1.0
    return (max(score, 0.0) / best) ** power
