"""The collapse stage: a hit whose verses better hits already list is dropped, or follows the
others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.retrieval import rerank
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import ANY_MODE
from lectio.retrieval.stage import Deep, Context, Setting


@dataclass(frozen=True)
class CollapseSettings:
    """A hit whose verses are all covered by better-ranked hits adds nothing new: drop it. One of
    which less than `min_new_share` of its verses is new follows the others. With
    `commentary_later`, a commentary (or other non-scripture) hit on verses already listed
    follows the others: its text is worth reading, so it stays, but it spent a page on verses the
    page had."""

    on: bool = True
    # 0: none follows; 0.5 and 0.9 moved no dev metric beyond noise but theology recall@20, which
    # 0.9 cost.
    min_new_share: float = 0.0
    # On the dev parts it gained a little everywhere and lost nowhere (Nave's budget recall .280
    # -> .284).
    commentary_later: bool = True


@dataclass(frozen=True)
class CollapseCovered(Deep):
    """Hits whose verses better hits already list are dropped (or, by share, moved back)."""

    min_new_share: float
    commentary_later: bool
    modes: frozenset[str] = ANY_MODE
    settings: ClassVar[tuple[Setting, ...]] = (Setting("collapse", CollapseSettings),)

    @classmethod
    def of(cls, config) -> CollapseCovered | None:
        collapse = config.stages.collapse
        return cls(collapse.min_new_share, collapse.commentary_later) if collapse.on else None

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.collapse_covered(hits, self.min_new_share, self.commentary_later)
