"""A hybrid search narrowed to scripture also hears the commentary and notes the caller may read:
the passages the unfiltered first page speaks for join the fusion (EvidenceSettings). Read as the
same caller, so only rows the caller may read speak."""

from __future__ import annotations

from lectio.index import security
from lectio.retrieval import candidates, feedback, fusion, stages
from lectio.retrieval.fusion import Ranking
from lectio.retrieval.request import VersionRequest


def asked(request: VersionRequest) -> bool:
    """A hybrid search narrowed to scripture hears the other kinds."""
    config = request.config
    return bool(config.evidence.weight) and request.filters.given.kind == "scripture" and config.hybrid


def spoken(request: VersionRequest) -> tuple[Ranking, object, Ranking]:
    """The passages the unfiltered first hits of a search narrowed to scripture speak for, the
    query's embedding, and the ranking of every kind (whose first hits feedback reads where no
    other filter narrows the search), read as feedback's first page is (no feedback, fused order)."""
    evidence = request.config.evidence
    wider = feedback.page_request(request, keep=tuple(name for name in feedback.NARROWING if name != "kind"))
    order, vector = fusion.ranking(wider)
    # The page the caller would have read unfiltered (the stages keep one hit per passage), read
    # down until `depth` of its hits can speak for a passage: those on 1 to `max_verses` verses.
    read = stages.page(wider, order, max(evidence.reads, evidence.depth))
    page = [(hit.chunk_id, hit.refs, hit.score) for hit in read
            if 1 <= len(hit.refs or ()) <= evidence.max_verses][:evidence.depth]
    where, params = request.filters.where(request.translation)
    return candidates.covered_passages(request.conn, request.table_name, page, where, params,
                                       evidence.max_verses), vector, order


def spoken_on_own_connection(request: VersionRequest) -> tuple[Ranking, Ranking]:
    """`spoken` on `request.conn`, a connection of its own, reading as the same principals: the
    passages spoken for and the unfiltered ranking."""
    with request.conn.transaction():
        security.act_as_reader(request.conn, request.filters.principals)
        ranking, _, order = spoken(request)
        return ranking, order
