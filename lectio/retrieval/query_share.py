"""The query-share stage: the first fused hits ordered again by how much of the query's content
words each one's own text holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.retrieval import rerank
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.stage import Context, Setting


@dataclass(frozen=True)
class QueryShareSettings:
    """The first `depth` fused hits re-ordered by how much of the query's content words each
    one's own text holds (lectio.retrieval.rerank.by_query_share). Hybrid mode only."""

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
        return rerank.by_query_share(hits, ctx.query, self.weight, self.head)
