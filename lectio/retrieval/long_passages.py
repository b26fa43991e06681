"""The long-passage stages: a passage longer than a page gives its place among the first k to its
best part further down (LongPassageParts), and the page is packed to its word-piece budget
(PackPage). Both read the search setting `stages.long_passages`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lectio.embedding.model import count_tokens
from lectio.retrieval.hits import Hit
from lectio.retrieval.modes import HYBRID_ONLY
from lectio.retrieval.stage import Deep, PageOnly, Context, Setting


@dataclass(frozen=True)
class LongPassageSettings:
    """A hit longer than `tokens` word pieces among the first k follows the shorter ones
    (long_passages_last, below); with `parts`, the best smaller scripture hit inside it (a verse or
    paragraph further down) takes its place. Hybrid mode only; 0 turns it off."""

    # A 46-verse pericope ranked first spent a whole 1,000-word-piece page on the one verse a
    # quotation asked for. 1000 (a page) with parts was chosen on the dev parts over 500, 700, 850
    # and 1500 and over no parts: near-quotation budget recall .985 -> 1.000, theology .499 ->
    # .507, recall@20 unchanged everywhere, MRR within noise (parts off cost theology MRR; 500 cost
    # it beyond noise); see docs/results.md.
    tokens: int = 1000
    parts: bool = True
    # The page a caller takes from the top holds `tokens` word pieces: with `pack_page`, a hit of
    # the first k that would pass what is left of it follows the hits that still fit
    # (pack_page, below), so one long paragraph does not end the page for the verses after it;
    # off, only hits longer than the whole page follow. Chosen on the dev parts: budget recall
    # theology .506 -> .524, Nave's .304 -> .311, recall@20 unchanged (the same k hits), theology
    # nDCG@10 .420 -> .411 within noise.
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
        return long_passages_last(hits, self.tokens, ctx.k, parts=True, sizes=ctx.sizes)


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
            return pack_page(hits, self.tokens)
        return long_passages_last(hits, self.tokens, ctx.k, sizes=ctx.sizes)


def long_passages_last(hits: list[Hit], max_tokens: int, depth: int, parts: bool = False,
                       sizes: dict[str, int] | None = None) -> list[Hit]:
    """Within the first `depth` hits, a hit whose text is longer than `max_tokens` word pieces
    follows the shorter ones (in order): a reader, or a model's context, that takes the page from
    the top spends a whole budget on it, and its vector, averaged over windows, speaks for none of
    its parts. With `parts`, the best-ranked smaller scripture hit inside such a passage (its verse
    or paragraph, further down the list) takes the passage's place, so what the passage answered
    with still comes first; run before collapse_covered, which would drop the part as covered.
    `sizes` keeps the hits' sizes across calls in one search, so no text is tokenized twice."""
    head, tail = hits[:depth], hits[depth:]
    sizes = {} if sizes is None else sizes
    _measure(head, max_tokens, sizes)
    long = {hit.chunk_id for hit in head if sizes[hit.chunk_id] > max_tokens}
    if not long:
        return hits
    if not parts:
        return [hit for hit in head if hit.chunk_id not in long] + [hit for hit in head if hit.chunk_id in long] + tail
    moved: set[str] = set()
    ordered = []
    for position, hit in enumerate(hits):
        if hit.chunk_id in moved:
            continue
        if hit.chunk_id in long:
            part = next((other for other in hits[position + 1:] if other.chunk_id not in moved
                         and other.chunk_id not in long and _inside(other, hit)), None)
            if part is not None:
                moved.add(part.chunk_id)
                ordered.append(part.scored(max(hit.score, part.score)))
        ordered.append(hit)
    return ordered


def pack_page(hits: list[Hit], budget: int) -> list[Hit]:
    """The hits in rank order, except that a hit which would pass what is left of `budget` word
    pieces follows the hits that still fit (in order): a caller that fills a model's context from
    the top stops at the first hit that does not fit, and one long paragraph would end the page
    for the verses after it. Every hit is counted exactly, as the caller's tokenizer would."""
    counts = count_tokens([hit.result_text for hit in hits])
    first, later, left = [], [], budget
    for hit, size in zip(hits, counts):
        if size <= left:
            first.append(hit)
            left -= size
        else:
            later.append(hit)
    return first + later


def _measure(hits: list[Hit], at_most: int, sizes: dict[str, int]) -> None:
    """Put in `sizes` the word pieces of each hit's text as a result returns it (result_text); for
    a text of at most `at_most` characters, its length instead, which no count of its pieces
    exceeds (a piece is at least one character): most hits are verses, and tokenizing every hit
    cost milliseconds a search."""
    texts = {hit.chunk_id: hit.result_text for hit in hits if hit.chunk_id not in sizes}
    long = [chunk_id for chunk_id, text in texts.items() if len(text) > at_most]
    sizes.update((chunk_id, len(text)) for chunk_id, text in texts.items())
    sizes.update(zip(long, count_tokens([texts[chunk_id] for chunk_id in long])))


def _inside(part: Hit, passage: Hit) -> bool:
    """Scripture of the same translation whose verses are all among the passage's, and fewer."""
    refs, around = set(part.refs or ()), set(passage.refs or ())
    return part.kind == passage.kind == "scripture" and part.translation == passage.translation \
        and bool(refs) and refs < around
