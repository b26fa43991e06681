"""Feedback from the first page (dense Rocchio): the query's vector moved toward the vectors of the
first hits of its first ranking, and the HNSW graph walked again from there. The first ranking is
always the unfiltered one (the same search without a filter that narrows rows, the translation
it ranks kept): a filter only narrows what may answer, so a filtered search moves its vector as
the unfiltered search does, and ranks its rows as that search ranks them.

A short question or a typed topic says little; the commentary, notes and confession prose that
answer it on the first page say what it leaves out, in the words and senses the verses use. The
moved vector is `alpha` * the query's + (1 - `alpha`) * the mean of the first `docs` hits' (each
unit length, the result normalised), and its neighbours join the fusion as one more list. A query
whose first vector hit is already as close as a quotation (cosine `skip_above` or more) is left as
it is: its answer is decided, and feedback could only move it. Read as the caller, so only rows the
caller may read move the vector."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, ClassVar

import numpy as np
from psycopg import sql

from lectio.retrieval import shape
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.retriever import PAGE, Declared, Proposals, Ranking, Unfiltered
from lectio.retrieval.stage import Setting
from lectio.retrieval.vector import vector_candidates

if TYPE_CHECKING:
    from lectio.retrieval.config import SearchConfig
    from lectio.retrieval.request import VersionRequest

# The filters that only narrow the rows a search may read (a translation also chooses the verses
# the retrievers rank, so the first page keeps it).
NARROWING = ("kind", "testament", "genre", "tradition", "tier")


@dataclass(frozen=True)
class FeedbackSettings:
    """Feedback from the first page (lectio.retrieval.feedback): the query's vector moved toward
    the first `docs` hits of the unfiltered search, keeping
    `alpha` of its own, and the moved vector's HNSW neighbours fused as one more list weighing
    `weight` (0: off). A first vector hit at cosine `skip_above` or more (a quotation) is left
    alone."""

    # On the readers' typed topics' dev part, weight 1 over the first 5 hits gained beyond noise
    # (recall@20 .195 -> .201, MRR .276 -> .287, nDCG@10 .135 -> .140); 0.5, alpha 0.7 and 10 hits
    # were no better. On the readers' questions it cost recall@20 beyond noise (.287 -> .261), so a
    # question takes none (`questions`; a query reads as one with or without its question mark,
    # so "do not be anxious" and "do not be anxious?" are moved alike). Every search moves its
    # vector toward the unfiltered first page, whatever its filters.
    # Queries of at most 3 content words (`max_words`), chosen on the dev parts with the learned
    # ranker on: topics recall@20 .203 -> .209 and nDCG@10 .143 -> .146 beyond noise, theology,
    # Nave's and near-quotations within it; at any length, or up to 5 words, the near-quotations'
    # MRR fell beyond noise (.962 -> .946), whatever `skip_above` (.6 to .8). The evidence of the
    # other kinds reads the page feedback moved (lectio.retrieval.ranking), so a topic narrowed to
    # scripture keeps the unfiltered topic's first scripture hits. Still off: a word only a note
    # holds ("bellwort", on the test fixtures) no longer puts the verse the note is on first when
    # the reader asks for scripture: feedback's neighbours of the moved vector outrank it.
    weight: float = 0.0
    docs: int = 5
    alpha: float = 0.5
    skip_above: float = 0.8
    # Whether a question (lectio.retrieval.query_text.QueryText.question_form) takes feedback too.
    questions: bool = False
    # A query of more content words than this takes none (0: any length).
    max_words: int = 3


class Feedback(Declared):
    """The HNSW neighbours of the query's vector moved toward the unfiltered first page."""

    name: ClassVar[str] = "feedback"
    settings: ClassVar[tuple[Setting, ...]] = (Setting("feedback", FeedbackSettings),)
    modes: ClassVar[frozenset[str]] = HYBRID_ONLY
    reads: ClassVar[str] = PAGE


    @classmethod
    def propose(cls, request: VersionRequest, found: Proposals, seen: Callable[[], Ranking] | None = None
                ) -> Ranking | None:
        """The moved vector's neighbours, where feedback runs, from the first page `seen` ranks.
        They are the unfiltered search's (its rank and best score are a neighbour's weight in
        fusion), with those the search's filters leave out named, for fusion to drop."""
        if seen is None or not wanted(request, found):
            return None
        vector = moved_vector(request, found.vector, seen())
        if vector is None:
            return None
        if not narrowed(request):
            return vector_candidates(request.conn, request.table_name, vector, found.where, found.params,
                                     request.config)
        wide = page_request(request)
        where, params = wide.filters.where(wide.translation)
        near = vector_candidates(request.conn, request.table_name, vector, where, params, request.config)
        return Unfiltered(near, _left_out(request, found, [i for i, _ in near]))


def narrowed(request: VersionRequest, beside: tuple[str, ...] = ()) -> bool:
    """Whether the search gives a narrowing filter other than those `beside`."""
    given = request.filters.given
    return any(getattr(given, name) for name in NARROWING if name not in beside)


def page_request(request: VersionRequest, keep: tuple[str, ...] = ()) -> VersionRequest:
    """The search whose first hits feedback reads: `request` without its narrowing filters (but
    those in `keep`), ranked as first_page_config says."""
    given = request.filters.given
    wider = replace(given, **{name: None for name in NARROWING if name not in keep})
    return replace(request, filters=replace(request.filters, given=wider), config=first_page_config(request.config))


@lru_cache(maxsize=64)
def first_page_config(config: SearchConfig) -> SearchConfig:
    """How the unfiltered first page is ranked: with no feedback of its own, and in fused order,
    as the learned ranker's training saw it (made once per configuration: it runs on every search
    narrowed by a filter)."""
    return config.with_settings({"feedback.weight": 0.0, "stages.learned_rank.model": "",
                                 "stages.learned_rank.record": False})


def wanted(request: VersionRequest, found: Proposals) -> bool:
    """Whether feedback runs: on in the settings, for a question only where the settings say so,
    and the first vector hit undecided."""
    settings, near = request.config.feedback, found.listed("vector")
    if not settings.weight or found.vector is None or not near:
        return False
    if not settings.questions and request.question:
        return False
    if settings.max_words and len(shape.content_words(request.query)) > settings.max_words:
        return False
    return near[0][1] < settings.skip_above


def moved_vector(request: VersionRequest, vector, first: Ranking) -> np.ndarray | None:
    """The query's vector moved toward the first hits of `first` (a ranking the caller may read);
    None where none of them has a vector."""
    settings = request.config.feedback
    ids = [chunk_id for chunk_id, _ in first[: settings.docs]]
    if not ids:
        return None
    rows = request.conn.execute(
        sql.SQL("SELECT embedding FROM {} WHERE chunk_id = ANY(%s)").format(sql.Identifier(request.table_name)),
        [ids]).fetchall()
    if not rows:
        return None
    centroid = np.mean([_unit(_array(row[0])) for row in rows], axis=0)
    query = _unit(np.asarray(vector, dtype=np.float32))
    moved = settings.alpha * query + (1 - settings.alpha) * _unit(centroid)
    return _unit(moved).astype(np.float32)


def _left_out(request: VersionRequest, found: Proposals, ids: list[str]) -> frozenset[str]:
    """Those of `ids` the search's filters (`found.where`) do not admit."""
    admitted = request.conn.execute(
        sql.SQL("SELECT chunk_id FROM {} WHERE chunk_id = ANY(%(ids)s) AND {}").format(
            sql.Identifier(request.table_name), found.where), {**found.params, "ids": ids}).fetchall()
    return frozenset(ids) - {row[0] for row in admitted}


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _array(value) -> np.ndarray:
    # pgvector's loaders give numpy arrays or Vector/HalfVector objects.
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
