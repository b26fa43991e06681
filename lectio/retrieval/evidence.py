"""A hybrid search narrowed to scripture also hears the commentary and notes the caller may read:
the passages the unfiltered first page speaks for join the fusion (EvidenceSettings). Read as the
same caller, so only rows the caller may read speak."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from lectio.index import security
from lectio.retrieval import candidates, fusion, stages
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.fusion import Ranking
from lectio.retrieval.request import VersionRequest


def asked(request: VersionRequest) -> bool:
    """A hybrid search narrowed to scripture hears the other kinds."""
    config = request.config
    return bool(config.evidence.weight) and request.filters.given.kind == "scripture" and config.hybrid


def spoken(request: VersionRequest) -> tuple[Ranking, object, Ranking]:
    """The passages the unfiltered first hits of a search narrowed to scripture speak for, the
    query's embedding, and the unfiltered ranking (whose first hits feedback reads)."""
    evidence, given = request.config.evidence, request.filters.given
    wider = replace(request, filters=replace(request.filters, given=replace(given, kind=None)))
    wider = replace(wider, config=_unfiltered(request.config))
    order, vector = fusion.ranking(wider)
    # The page the caller would have read unfiltered (the stages keep one hit per passage), read
    # down until `depth` of its hits can speak for a passage: those on 1 to `max_verses` verses.
    read = stages.page(wider, order, max(evidence.reads, evidence.depth))
    page = [(hit.chunk_id, hit.refs, hit.score) for hit in read
            if 1 <= len(hit.refs or ()) <= evidence.max_verses][:evidence.depth]
    where, params = request.filters.where(request.translation)
    return candidates.covered_passages(request.conn, request.table_name, page, where, params,
                                       evidence.max_verses), vector, order


@lru_cache(maxsize=64)
def _unfiltered(config: SearchConfig) -> SearchConfig:
    """How the unfiltered ranking is read: it is the first page feedback reads, so it takes none
    itself, and its page is read in fused order, as the learned ranker's training saw the
    evidence (made once per configuration: this runs on every search narrowed to scripture)."""
    return config.with_settings({"feedback.weight": 0.0, "stages.learned_rank.model": "",
                                 "stages.learned_rank.record": False})


def spoken_on_own_connection(request: VersionRequest) -> tuple[Ranking, Ranking]:
    """`spoken` on `request.conn`, a connection of its own, reading as the same principals: the
    passages spoken for and the unfiltered ranking."""
    with request.conn.transaction():
        security.act_as_reader(request.conn, request.filters.principals)
        ranking, _, order = spoken(request)
        return ranking, order
