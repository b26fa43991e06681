"""The rerank stage: a trained cross-encoder (lectio.reranker.model) reads the query with each of
the first `depth` fused hits and orders them again.

The retrievers judge a hit by a vector made without the query, or by shared words; the
cross-encoder reads both texts at once, which is what lets a hit from the second page reach the
first. Its order is fused with the retrievers' (reciprocal ranks, the reranker weighing `weight`
against the fused order's 1) so a hit both sides put first stays first: a quoted verse, found
word for word, does not depend on the reranker agreeing. Hybrid searches only: vector and lexical
stay the plain baselines they are, and a reference lookup or a word study never reaches a stage.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.stage import Context, Setting
from lectio.settings import runtime_settings

# Reciprocal-rank constant of the fusion with the fused order: small, since it fuses the first
# `depth` hits only and the top of the page is what it decides.
RANK_K = 10


@dataclass(frozen=True)
class RerankSettings:
    """`model` names a reranker trained in the home (`lectio model train`; "latest" for the
    newest), "active" for the one the searched version's gate let in (none: no reranking), "" for none.
    It reads the first `depth` hits, each cut with the query to `tokens` word pieces."""

    model: str = "active"
    depth: int = 20
    tokens: int = 128
    # Half the fused order's say: chosen on the dev parts over 1 with the six-layer model, which
    # cost theology's MRR less at 0.5 and gained on quotations only there (docs/results.md).
    weight: float = 0.5


@dataclass(frozen=True)
class Rerank:
    model: str
    head: int
    tokens: int
    weight: float
    modes: frozenset[str] = HYBRID_ONLY
    settings: ClassVar[tuple[Setting, ...]] = (Setting("rerank", RerankSettings),)
    trained: ClassVar[str] = "rerank.model"

    @classmethod
    def of(cls, config) -> Rerank | None:
        settings = config.stages.rerank
        return cls(settings.model, settings.depth, settings.tokens, settings.weight) if settings.model else None

    def depth(self, k: int) -> int:
        # Without a model to read them, the stage reads no more hits than the page: a home with
        # no reranker ranks exactly as it did before there were any.
        return max(k, self.head) if _chosen(self.model) else k

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        chosen = _chosen(self.model)
        if chosen is None:
            return hits
        head = hits[:self.head]
        from lectio.reranker.model import loaded

        scores = loaded(runtime_settings().home, chosen).score(ctx.query, [hit.text for hit in head], self.tokens)
        return fuse(head, scores.tolist(), self.weight) + hits[self.head:]


def fuse(head: list[Hit], scores: list[float], weight: float) -> list[Hit]:
    """`head` ordered by its fused order's reciprocal rank plus `weight` times the reranker's."""
    by_reranker = sorted(range(len(head)), key=lambda i: -scores[i])
    reranked = {i: rank for rank, i in enumerate(by_reranker)}
    fused = [(1 / (RANK_K + i) + weight / (RANK_K + reranked[i]), -i) for i in range(len(head))]
    order = sorted(range(len(head)), key=lambda i: fused[i], reverse=True)
    return [replace(head[i], score=fused[i][0]) for i in order]


def _chosen(model: str) -> str | None:
    """The model a setting names, None for none. "active" is made the searched version's choice
    at the door (lectio.retrieval.door); a stage that meets it unmade serves no version's search,
    and reads none."""
    return None if model in ("", "active") else model
