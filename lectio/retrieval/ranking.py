"""A ranked search from proposals to page: the retrievers' proposals fused (with the evidence of
the other kinds where the search is narrowed to scripture), then the ranking stages."""

from __future__ import annotations

from concurrent.futures import wait
from dataclasses import replace

from lectio.retrieval import evidence, fusion, stages, threads
from lectio.retrieval.proposals import proposals
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.response import SearchResponse, results


def ranked_search(request: VersionRequest) -> SearchResponse:
    if not evidence.asked(request):
        order, _ = fusion.ranking(request)
    elif request.vector_conn is None:
        spoken, vector, first = evidence.spoken(request)
        order, _ = fusion.ranking(request, vector, spoken, first)
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
        order = fusion.ranked_with_feedback(request, found, spoken, first)
    return SearchResponse(request.query, request.config.mode, request.version, results(stages.page(request, order)))
