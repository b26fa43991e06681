"""The MMR stage: maximal marginal relevance, for a crowded theme that returns near-duplicate
verses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from psycopg import sql

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
        return mmr(ctx.conn, ctx.table_name, hits, ctx.k, self.lam)


def mmr(conn, table_name, hits: list[Hit], k: int, lam: float) -> list[Hit]:
    """Re-rank by maximal marginal relevance; relevance is the fused score scaled to [0, 1],
    redundancy the cosine similarity of the chunks' embeddings."""
    if len(hits) <= 1:
        return hits
    ids = [hit.chunk_id for hit in hits]
    vectors = dict(conn.execute(
        sql.SQL("SELECT chunk_id, embedding FROM {} WHERE chunk_id = ANY(%s)").format(sql.Identifier(table_name)), [ids]
    ).fetchall())
    matrix = np.array([as_array(vectors[i]) for i in ids], dtype=np.float32)
    similarity = matrix @ matrix.T  # embeddings are unit length
    scores = np.array([hit.score for hit in hits], dtype=np.float32)
    relevance = scores / scores.max() if scores.max() > 0 else scores
    chosen: list[int] = []
    remaining = list(range(len(hits)))
    while remaining and len(chosen) < k:
        def value(i: int) -> float:
            redundancy = max((similarity[i, j] for j in chosen), default=0.0)
            return lam * relevance[i] - (1 - lam) * redundancy
        best = max(remaining, key=value)
        chosen.append(best)
        remaining.remove(best)
    return [hits[i] for i in chosen]


def as_array(value) -> np.ndarray:
    # pgvector's loaders give numpy arrays or Vector objects; without them the text form arrives.
    if hasattr(value, "to_numpy"):
        return value.to_numpy()
    return np.asarray(json.loads(value) if isinstance(value, str) else value)
