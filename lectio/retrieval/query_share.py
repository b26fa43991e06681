"""The query-share stage: the first fused hits ordered again by how much of the query's content
words each one's own text holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.retrieval.expansion import query_words
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.shape import content_words
from lectio.retrieval.stage import Context, Setting


@dataclass(frozen=True)
class QueryShareSettings:
    """The first `depth` fused hits re-ordered by how much of the query's content words each
    one's own text holds (by_query_share, below). Hybrid mode only."""

    # 0.2 was chosen on the dev parts over 0.5 and 1: the only weight that gained beyond noise
    # (Nave's MRR) and lost nowhere; 1 lifted near-quotation MRR within noise and cost budget.
    weight: float = 0.2
    depth: int = 10


@dataclass(frozen=True)
class QueryShare:
    """The first `depth` hits ordered again by how much of the query their own text holds."""

    weight: float
    head: int
    modes: frozenset[str] = HYBRID_ONLY
    settings: ClassVar[tuple[Setting, ...]] = (Setting("query_share", QueryShareSettings),)

    @classmethod
    def of(cls, config) -> QueryShare | None:
        share = config.stages.query_share
        return cls(share.weight, share.depth) if share.weight else None

    def depth(self, k: int) -> int:
        return max(k, self.head)

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return by_query_share(hits, ctx.query, self.weight, self.head)


def by_query_share(hits: list[Hit], query: str, weight: float, depth: int) -> list[Hit]:
    """The first `depth` hits ordered again by score * (1 + weight * share²), where share is how
    many of the query's content words the hit's own text holds. Fusion sees each retriever's
    verdict, not the words: a verse that holds nearly all of a quoted line can sit behind a
    passage each retriever put a little lower. Squared, so a partial overlap counts for little."""
    wanted = set(content_words(query))
    if not wanted or weight <= 0:
        return hits
    head = [hit.scored(hit.score * (1 + weight * _share(hit, wanted) ** 2)) for hit in hits[:depth]]
    return sorted(head, key=lambda hit: -hit.score) + hits[depth:]


def _share(hit: Hit, wanted: set[str]) -> float:
    return len(wanted & set(query_words(hit.own_text))) / len(wanted)
