"""The long-passage stages: a passage longer than a page gives its place among the first k to its
best part further down (LongPassageParts), and the page is packed to its word-piece budget
(PackPage). Both read the search setting `stages.long_passages`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.retrieval import rerank
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.stage import Deep, PageOnly, Context, Setting


@dataclass(frozen=True)
class LongPassageSettings:
    """A hit longer than `tokens` word pieces among the first k follows the shorter ones
    (lectio.retrieval.rerank.long_passages_last); with `parts`, the best smaller scripture hit
    inside it (a verse or paragraph further down) takes its place. Hybrid mode only; 0 turns it
    off."""

    # A 46-verse pericope ranked first spent a whole 1,000-word-piece page on the one verse a
    # quotation asked for. 1000 (a page) with parts was chosen on the dev parts over 500, 700, 850
    # and 1500 and over no parts: near-quotation budget recall .985 -> 1.000, theology .499 ->
    # .507, recall@20 unchanged everywhere, MRR within noise (parts off cost theology MRR; 500 cost
    # it beyond noise); see docs/results.md.
    tokens: int = 1000
    parts: bool = True
    # The page a caller takes from the top holds `tokens` word pieces: with `pack_page`, a hit of
    # the first k that would pass what is left of it follows the hits that still fit
    # (lectio.retrieval.rerank.pack_page), so one long paragraph does not end the page for the
    # verses after it; off, only hits longer than the whole page follow. Chosen on the dev parts:
    # budget recall theology .506 -> .524, Nave's .304 -> .311, recall@20 unchanged (the same k
    # hits), theology nDCG@10 .420 -> .411 within noise.
    pack_page: bool = True

_SETTINGS = (Setting("long_passages", LongPassageSettings),)


@dataclass(frozen=True)
class LongPassageParts(Deep):
    """A passage longer than a page among the first k follows the shorter hits, the best part of
    it found further down taking its place. Before CollapseCovered, which would drop the part as
    covered by the passage."""

    tokens: int
    modes: frozenset[str] = HYBRID_ONLY
    settings: ClassVar[tuple[Setting, ...]] = _SETTINGS

    @classmethod
    def of(cls, config) -> LongPassageParts | None:
        long = config.stages.long_passages
        return cls(long.tokens) if long.tokens and long.parts else None

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        return rerank.long_passages_last(hits, self.tokens, ctx.k, parts=True, sizes=ctx.sizes)


@dataclass(frozen=True)
class PackPage(PageOnly):
    """The page holds `tokens` word pieces. With `pack`, a hit that would pass what is left of it
    follows the hits that still fit; without, only a hit longer than the whole page follows the
    others."""

    tokens: int
    pack: bool
    modes: frozenset[str] = HYBRID_ONLY
    settings: ClassVar[tuple[Setting, ...]] = _SETTINGS

    @classmethod
    def of(cls, config) -> PackPage | None:
        long = config.stages.long_passages
        return cls(long.tokens, long.pack_page) if long.tokens else None

    def apply(self, hits: list[Hit], ctx: Context) -> list[Hit]:
        if self.pack:
            return rerank.pack_page(hits, self.tokens)
        return rerank.long_passages_last(hits, self.tokens, ctx.k, sizes=ctx.sizes)
