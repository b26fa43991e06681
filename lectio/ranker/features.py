"""What the learned ranker reads of one hit: numbers the search has already computed.

Fusion keeps one score per hit; these keep what went into it (where each retriever put the hit
and how close it came to that list's best), what the hit is (its granularity, its kind, how many
verses it covers, how long it is), how the query relates to it (the cosine of the two vectors,
the share of the query's words its text holds) and the query's shape, so trees can learn that a
question wants other hits than a one-word topic. Nothing here names a verse: a feature that did
would learn the labels, not the ranking."""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

# The retrievers fusion names (lectio.retrieval.fusion.fused), in a fixed order: a model is read
# by column position.
LISTS = ("vector", "words", "titles", "other_translations", "feedback", "passages", "evidence", "xrefs")
GRANULARITIES = ("verse", "paragraph", "pericope", "chapter")
KINDS = ("scripture", "commentary", "notes", "reformation", "patristic", "modern", "document")
NAMES = (
    "fused_position", "fused_share", "cosine", "cosine_below_best", "cited", "refs", "characters", "query_share",
    *(f"{name}_{what}" for name in LISTS for what in ("reciprocal_rank", "share")),
    *(f"granularity_{name}" for name in GRANULARITIES), *(f"kind_{name}" for name in KINDS),
    "query_words", "query_question", "query_topic", "query_paragraph",
)


@dataclass(frozen=True)
class QueryFacts:
    """The query's shape as the search read it."""

    words: int
    question: bool
    topic: bool
    paragraph: bool


@dataclass(frozen=True)
class HitFacts:
    """One hit as the search saw it: `heard` maps a retriever's name to (rank, share of the list's
    best) for the lists that proposed the hit; `cosine` is None where the query has no vector."""

    fused_share: float
    cosine: float | None
    cited: int
    granularity: str | None
    kind: str | None
    refs: int
    characters: int
    query_share: float
    heard: dict[str, tuple[int, float]] = field(default_factory=dict)


def matrix(query: QueryFacts, hits: list[HitFacts]) -> np.ndarray:
    """One row per hit, in the order given, one column per NAMES."""
    cosines = [hit.cosine for hit in hits if hit.cosine is not None]
    best = max(cosines, default=0.0)
    rows = [_row(query, position, hit, best) for position, hit in enumerate(hits, start=1)]
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), len(NAMES))


def _row(query: QueryFacts, position: int, hit: HitFacts, best_cosine: float) -> list[float]:
    cosine = math.nan if hit.cosine is None else hit.cosine
    heard = []
    for name in LISTS:
        rank, share = hit.heard.get(name, (0, 0.0))
        heard += [1 / rank if rank else 0.0, share]
    return [
        math.log(position), hit.fused_share, cosine, best_cosine - cosine, math.log1p(hit.cited),
        math.log1p(hit.refs), math.log1p(hit.characters), hit.query_share, *heard,
        *(float(hit.granularity == name) for name in GRANULARITIES), *(float(hit.kind == name) for name in KINDS),
        float(query.words), float(query.question), float(query.topic), float(query.paragraph),
    ]


# Where a search is being recorded for training (lectio.training.ranker.trainer), the ranking stage adds
# each page's features and hits here; None otherwise.
_RECORDING: ContextVar[list | None] = ContextVar("lectio_ranker_recording", default=None)


@contextmanager
def recording() -> Iterator[list]:
    """Within, every page the learned-rank stage sees appends (features, hits) to the list
    yielded: what training learns from, computed exactly as a search computes it."""
    pages: list = []
    token = _RECORDING.set(pages)
    try:
        yield pages
    finally:
        _RECORDING.reset(token)


def recorder() -> list | None:
    """The list a recording appends to; None where nothing records."""
    return _RECORDING.get()
