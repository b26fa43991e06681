"""The retrievers' proposals fused into one ranking by reciprocal rank fusion (weighing scores in
the hybrid), with the cross-reference graph and the citation prior; a one-word topic fused
again with its words weighing more (lectio.retrieval.topics)."""

from __future__ import annotations

from typing import Callable

from psycopg import sql

from lectio.retrieval import candidates, feedback, topics
from lectio.retrieval.hits import hits_by_id
from lectio.retrieval.proposals import Proposals, proposals
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.signals import Fused, Signals

Ranking = list[tuple[str, float]]  # (chunk_id, score), best first


def ranked(request: VersionRequest, rows: sql.Composable | None = None) -> Ranking:
    """Vector, lexical, or both (with pericope titles and the cross-reference graph) fused by
    reciprocal rank fusion; `rows` narrows the rows ranked."""
    return fused(request, proposals(request, rows), request.config.lexical.weight)


# The unfiltered ranking feedback reads where a filter narrows the search, given the query's
# embedding; asked for only where feedback runs.
FirstPage = Callable[[object], Ranking]


def ranking(request: VersionRequest, vector=None, evidence: Ranking | None = None,
            first: FirstPage | None = None) -> tuple[Ranking, object]:
    """The fused ranking (with `evidence`, where given), a topic's fused again, and the query's
    embedding (`vector` where it was already made). Feedback, where it runs, reads the first hits
    of `first` (the unfiltered ranking of the same query), else of this ranking before feedback."""
    found = proposals(request, vector=vector)
    return ranked_with_feedback(request, found, evidence, first), found.vector


def ranked_with_feedback(request: VersionRequest, found: Proposals, evidence: Ranking | None,
                         first: FirstPage | None = None) -> Ranking:
    """`ranked_from`, and again with the feedback list where feedback runs (lectio.retrieval.feedback)."""
    order = ranked_from(request, found, evidence)
    if not feedback.wanted(request, found):
        return order
    page = order if first is None else first(found.vector)
    return ranked_from(request, feedback.with_feedback(request, found, page), evidence)


def ranked_from(request: VersionRequest, found: Proposals, evidence: Ranking | None) -> Ranking:
    """The proposals `found` fused (with `evidence`, where given), a topic's fused again."""
    config = request.config
    order = fused(request, found, config.lexical.weight, evidence=evidence)
    if _is_topic(request, order):
        if config.topics.rows != "all":
            rows = topics.TOPIC_ROWS[config.topics.rows]
            order = fused(request, proposals(request, rows, found.vector), config.topics.lexical_weight,
                             evidence=evidence)
        else:
            order = fused(request, found, config.topics.lexical_weight, config.topics.other_translations_weight,
                             evidence)
    return order


def fused(request: VersionRequest, found: Proposals, lexical_weight: float, others_weight: float = 0.0,
          evidence: Ranking | None = None) -> Ranking:
    """The proposals fused, BM25 weighing `lexical_weight` (and the other translations' BM25,
    where it was read, `others_weight`; the passages other kinds speak for, `evidence`, where
    given, as EvidenceSettings weighs them); in a hybrid, with the cross-reference graph and the
    citation prior."""
    conn, table_name, config, layout = request.conn, request.table_name, request.config, request.layout
    # Vector first, as fusion has always taken them: ties keep that order.
    named = [(name, weight, listed) for name, weight, listed in (
        ("vector", config.vector.weight, found.near), ("words", lexical_weight, found.words),
        ("titles", config.titles.weight, found.titles)) if listed is not None]
    if others_weight and found.others is not None:
        named.append(("other_translations", others_weight, found.others))
    if found.feedback is not None:
        named.append(("feedback", config.feedback.weight, found.feedback))
    if found.passages:
        named.append(("passages", config.passages.weight, found.passages))
    if evidence:
        named.append(("evidence", config.evidence.weight, evidence))
    lists = [(weight, listed) for _, weight, listed in named]
    # Scores weigh in the hybrid only: vector and lexical stay the plain baselines they are.
    power = config.fusion.score_power if config.hybrid else 0.0
    together = _admitted(found, candidates.fuse(lists, config.fusion.rrf_k, power) if len(lists) > 1 else lists[0][1])
    if config.hybrid and config.xrefs.weight:
        linked = candidates.xref_candidates(conn, table_name, together[: config.xrefs.seeds], found.vector,
                                            (found.where, found.params), config, layout)
        if linked:
            named.append(("xrefs", config.xrefs.weight, linked))
            together = _admitted(found, candidates.fuse([*lists, (config.xrefs.weight, linked)], config.fusion.rrf_k,
                                                        power))
    if config.hybrid and config.fusion.prominence_weight:
        together = candidates.weigh_prominence(together, config.fusion.prominence_weight, found.index.cited)
    return Fused(together, Signals(tuple((name, listed) for name, _, listed in named), found.vector, found.index.cited))


def _admitted(found: Proposals, together: Ranking) -> Ranking:
    """`together` without the feedback neighbours the search's filters leave out."""
    if not found.feedback_outside:
        return together
    return [hit for hit in together if hit[0] not in found.feedback_outside]


def _is_topic(request: VersionRequest, order: Ranking) -> bool:
    """A short query that names no passage: its best hit is not a whole pericope."""
    if not order or not topics.topic_shaped(request.query, request.config, request.filters):
        return False
    best = hits_by_id(request.conn, request.table_name, order[:1])
    return bool(best) and best[0].granularity != "pericope"
