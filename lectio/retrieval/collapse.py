"""The collapse stage: a hit whose verses better hits already list is dropped, or follows the
others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

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
        return collapse_covered(hits, self.min_new_share, self.commentary_later)


def collapse_covered(hits: list[Hit], min_new_share: float = 0.0,
                     commentary_later: bool = False) -> list[Hit]:
    """Drop a hit whose verses, in its translation, are all in better-ranked hits: a verse under
    the paragraph already shown, the same paragraph reached twice. A hit of which less than
    `min_new_share` of its verses is new moves after the others (in order, judged again by what
    now precedes it): a pericope over verses already listed spends a reader's budget on little
    new. Hits without verse refs (documents, notes) and commentary (its text is not the verses')
    always stay; with `commentary_later`, commentary on verses all already listed follows the
    others, since on a page of verses it spends the reader's budget on none they lack."""
    covered: set[tuple[str | None, str]] = set()
    kept, later = _collapse(hits, covered, min_new_share, commentary_later)
    return kept + _collapse(later, covered, 0.0)[0]


def _collapse(hits: list[Hit], covered: set, min_new_share: float,
              commentary_later: bool = False) -> tuple[list[Hit], list[Hit]]:
    """(kept, moved later) of `hits`; `covered` gains the verses of those kept."""
    kept, later = [], []
    for hit in hits:
        refs = hit.refs or []
        if hit.kind != "scripture" or not refs:
            if refs and commentary_later and set(refs) <= {ref for _, ref in covered}:
                later.append(hit)
            else:
                kept.append(hit)
            continue
        keys = {(hit.translation, ref) for ref in refs}
        new = keys - covered
        if not new:
            continue
        if len(new) < min_new_share * len(keys):
            later.append(hit)
            continue
        covered |= keys
        kept.append(hit)
    return kept, later
