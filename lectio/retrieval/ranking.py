"""A ranked search from proposals to page: the retrievers' proposals fused (with the evidence of
the other kinds where the search is narrowed to scripture: lectio.retrieval.evidence), then the
ranking stages."""

from __future__ import annotations

from concurrent.futures import wait
from dataclasses import replace

from lectio.index import security
from lectio.retrieval import feedback, fusion, stages, threads
from lectio.retrieval.evidence import Evidence, covered_passages
from lectio.retrieval.proposals import proposals
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.response import SearchResponse, results
from lectio.retrieval.retriever import Ranking


def ranked_search(request: VersionRequest) -> SearchResponse:
    if not Evidence.asked(request):
        order, _ = fusion.ranking(request, first=_first_page(request))
    elif request.vector_conn is None:
        spoken, vector, first = _spoken(request)
        order, _ = fusion.ranking(request, vector, spoken, _first_page(request, first))
    else:
        # Two connections: the unfiltered ranking the evidence needs is read on the second while
        # the first reads the filtered retrievers, so the evidence costs about one ranking's time.
        beside = threads.evidence().submit(_spoken_on_own_connection,
                                           replace(request, conn=request.vector_conn, vector_conn=None))
        try:
            found = proposals(replace(request, vector_conn=None))
        finally:
            wait([beside])  # the second connection is the caller's again only once its reads are done
        spoken, first = beside.result()
        order = fusion.ranked_with_page(request, found, spoken, _first_page(request, first))
    return SearchResponse(request.query, request.config.mode, request.version, results(stages.page(request, order)))


def _first_page(request: VersionRequest, every_kind: Ranking | None = None) -> fusion.FirstPage | None:
    """The ranking feedback reads where it is not this search's own: None for a search no filter
    narrows; `every_kind` (the ranking of every kind the evidence read) where only the kind narrows
    it; else the search without its narrowing filters, ranked only if feedback runs."""
    if not feedback.narrowed(request):
        return None
    if every_kind is not None and not feedback.narrowed(request, beside=("kind",)):
        return lambda _vector: every_kind
    return lambda vector: fusion.ranking(feedback.page_request(request), vector)[0]


def _spoken(request: VersionRequest) -> tuple[Ranking, object, Ranking]:
    """The passages the unfiltered first hits of a search narrowed to scripture speak for, the
    query's embedding, and the ranking of every kind (whose first hits feedback reads where no
    other filter narrows the search), read as feedback's first page is (no feedback, fused order).
    The hits that speak are read from that ranking as feedback moves it, where feedback is on."""
    evidence = request.config.evidence
    wider = feedback.page_request(request, keep=tuple(name for name in feedback.NARROWING if name != "kind"))
    found = proposals(wider)
    order = fusion.ranked_with_page(wider, found, None)
    # The page the caller would have read unfiltered (the stages keep one hit per passage), read
    # down until `depth` of its hits can speak for a passage: those on 1 to `max_verses` verses.
    # With feedback, that page is the one feedback moved: the evidence then speaks for what the
    # unfiltered search shows, so narrowing to scripture keeps its first scripture hits.
    read = stages.page(wider, _with_feedback(request, wider, found, order), max(evidence.reads, evidence.depth))
    page = [(hit.chunk_id, hit.refs, hit.score) for hit in read
            if 1 <= len(hit.refs or ()) <= evidence.max_verses][:evidence.depth]
    where, params = request.filters.where(request.translation)
    return (covered_passages(request.conn, request.table_name, page, where, params, evidence.max_verses), found.vector,
            order)


def _with_feedback(request: VersionRequest, wider: VersionRequest, found, order: Ranking) -> Ranking:
    """`order` (the unfiltered ranking without feedback) with feedback's list fused in as the
    unfiltered search fuses it, where the search's settings turn feedback on."""
    weight = request.config.feedback.weight
    if not weight:
        return order
    heard = replace(wider, config=wider.config.with_settings({"feedback.weight": weight}))
    return fusion.ranked_with_page(heard, found, None, first=lambda _vector: order)


def _spoken_on_own_connection(request: VersionRequest) -> tuple[Ranking, Ranking]:
    """`_spoken` on `request.conn`, a connection of its own, reading as the same principals: the
    passages spoken for and the unfiltered ranking."""
    with request.conn.transaction():
        security.act_as_reader(request.conn, request.filters.principals)
        ranking, _, order = _spoken(request)
        return ranking, order
