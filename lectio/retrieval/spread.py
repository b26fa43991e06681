"""The spread stage: one prolific source cannot fill a first page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.stage import Deep, Context, Setting


@dataclass(frozen=True)
class SpreadSources(Deep):
    """One non-scripture source's hits past its first `per_source` follow the others; not when
    the caller asks for one kind, whose sources are all the page may hold."""

    per_source: int
    modes: frozenset[str] = HYBRID_ONLY
    # One prolific commentary (Spurgeon's 21,700 passages on the Psalms) can fill a first page:
    # past this many hits from one non-scripture source, its further hits follow all the others.
    # Hybrid mode, and only when no kind is asked for; None turns it off.
    settings: ClassVar[tuple[Setting, ...]] = (Setting("per_source", "int | None", 2),)

    @classmethod
    def of(cls, config) -> SpreadSources | None:
        return None if config.stages.per_source is None else cls(config.stages.per_source)

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return hits if ctx.kind is not None else spread_sources(hits, self.per_source)


def spread_sources(hits: list[Hit], per_source: int) -> list[Hit]:
    """Keep the order, but move each non-scripture source's hits past its first `per_source` to
    the end (still in order): scripture's translations are never capped."""
    taken: dict[str, int] = {}
    first, later = [], []
    for hit in hits:
        if hit.kind == "scripture":
            first.append(hit)
            continue
        taken[hit.source_id] = taken.get(hit.source_id, 0) + 1
        (first if taken[hit.source_id] <= per_source else later).append(hit)
    return first + later
