"""A hybrid search narrowed to scripture also hears the commentary and notes the caller may read:
the passages the unfiltered first page speaks for join the fusion (EvidenceSettings). Read as the
same caller, so only rows the caller may read speak."""

from __future__ import annotations

from dataclasses import replace

from lectio.index import security
from lectio.retrieval import candidates, fusion, stages
from lectio.retrieval.fusion import Ranking
from lectio.retrieval.modes import Mode
from lectio.retrieval.request import VersionRequest


def asked(request: VersionRequest) -> bool:
    """A hybrid search narrowed to scripture hears the other kinds."""
    config = request.config
    return bool(config.evidence.weight) and request.filters.given.kind == "scripture" and config.mode == Mode.HYBRID


def spoken(request: VersionRequest) -> tuple[Ranking, object]:
    """The passages the unfiltered first hits of a search narrowed to scripture speak for, and the
    query's embedding."""
    evidence, given = request.config.evidence, request.filters.given
    wider = replace(request, filters=replace(request.filters, given=replace(given, kind=None)))
    order, vector = fusion.ranking(wider)
    # The page the caller would have read unfiltered: the stages keep one hit per passage.
    page = [(hit.chunk_id, hit.refs, hit.score) for hit in stages.page(wider, order, evidence.depth)]
    where, params = request.filters.where(request.translation)
    return candidates.covered_passages(request.conn, request.table_name, page, where, params,
                                       evidence.max_verses), vector


def spoken_on_own_connection(request: VersionRequest) -> Ranking:
    """`spoken` on `request.conn`, a connection of its own, reading as the same principals."""
    with request.conn.transaction():
        security.act_as_reader(request.conn, request.filters.principals)
        return spoken(request)[0]
