"""A ranked search from proposals to page: the retrievers' proposals fused (with the evidence of
the other kinds where the search is narrowed to scripture), then the ranking stages."""

from __future__ import annotations

from concurrent.futures import wait
from dataclasses import replace

from lectio.retrieval import evidence, feedback, fusion, stages, threads
from lectio.retrieval.proposals import proposals
from lectio.retrieval.fusion import Ranking
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.response import SearchResponse, results


def ranked_search(request: VersionRequest) -> SearchResponse:
    if not evidence.asked(request):
        order, _ = fusion.ranking(request, first=_first_page(request))
    elif request.vector_conn is None:
        spoken, vector, first = evidence.spoken(request)
        order, _ = fusion.ranking(request, vector, spoken, _first_page(request, first))
    else:
        # Two connections: the unfiltered ranking the evidence needs is read on the second while
        # the first reads the filtered retrievers, so the evidence costs about one ranking's time.
        beside = threads.evidence().submit(evidence.spoken_on_own_connection,
                                           replace(request, conn=request.vector_conn, vector_conn=None))
        try:
            found = proposals(replace(request, vector_conn=None))
        finally:
            wait([beside])  # the second connection is the caller's again only once its reads are done
        spoken, first = beside.result()
        order = fusion.ranked_with_feedback(request, found, spoken, _first_page(request, first))
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
