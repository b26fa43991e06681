"""The MMR stage: maximal marginal relevance, for a crowded theme that returns near-duplicate
verses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.retrieval import rerank
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import ANY_MODE
from lectio.retrieval.stage import Deep, Context, Setting


@dataclass(frozen=True)
class Mmr(Deep):
    """Maximal marginal relevance: k hits chosen among the pool, each the most relevant least
    like those taken."""

    lam: float
    modes: frozenset[str] = ANY_MODE
    # Each next hit maximises lambda * relevance - (1 - lambda) * its similarity to the hits
    # already taken. None (the default) keeps the ranking as fused.
    settings: ClassVar[tuple[Setting, ...]] = (Setting("mmr_lambda", "float | None", None),)

    @classmethod
    def of(cls, config) -> Mmr | None:
        return None if config.stages.mmr_lambda is None else cls(config.stages.mmr_lambda)

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.mmr(ctx.conn, ctx.table_name, hits, ctx.k, self.lam)
