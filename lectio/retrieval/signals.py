"""A fused ranking that remembers what each retriever said of each hit.

Fusion reduces every retriever's list to one score per chunk; a ranker that learns how to weigh
them (lectio.ranker) needs the lists themselves: where each retriever put the hit, and how close
its score came to that list's best. A Fused is the ranking (a list of (chunk_id, score), best
first, as every step after fusion reads it) with those lists beside it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

Ranking = list[tuple[str, float]]  # (chunk_id, score), best first


@dataclass(frozen=True)
class Said:
    """What one retriever said of one hit: its rank in the list (1 first) and its score over the
    list's best (1 for the best; the scores' own scale differs by retriever)."""

    rank: int
    share: float


@dataclass(frozen=True)
class Signals:
    """The lists one fusion read, by retriever name, the query's embedding (None in lexical mode)
    and how often the corpus's commentators cite chunks (the citation prior's counts)."""

    lists: tuple[tuple[str, Ranking], ...] = ()
    vector: object = None
    cited: Callable[[list[str]], dict[str, int]] | None = None

    @cached_property
    def heard(self) -> dict[str, dict[str, Said]]:
        """What each list said of each of its chunks, by list name: made only where a ranker
        asks, so a search without one pays nothing for it."""
        return {name: _said(ranked) for name, ranked in self.lists}


class Fused(list):
    """A ranking with the Signals of the fusion that made it."""

    def __init__(self, ranking: Ranking, signals: Signals):
        super().__init__(ranking)
        self.signals = signals


def _said(ranked: Ranking) -> dict[str, Said]:
    best = ranked[0][1] if ranked else 0.0
    return {chunk_id: Said(rank, score / best if best > 0 else 0.0)
            for rank, (chunk_id, score) in enumerate(ranked, start=1)}


def signals_of(ranking) -> Signals | None:
    """The Signals a ranking carries, None for a plain list."""
    return getattr(ranking, "signals", None)
