"""Expanding reference ranges to verse ids with real verse counts.

refs.py parses without knowing how many verses a chapter has; chunkers that record the verses a
text cites need the counts, which pysword's versification tables provide.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from lectio.bible.books import BOOKS
from lectio.bible.refs import Ref, RefRange, find_references

# A range longer than this ("Genesis 1-50") says little about any one verse; only its ends are kept.
MAX_RANGE_VERSES = 200


@lru_cache(maxsize=1)
def _verse_counts() -> dict[str, tuple[int, ...]]:
    """Verses per chapter for each book id: the most any of the KJV, NRSV and NRSVA
    versifications gives (pysword's tables), so a verse one of them numbers is never lost."""
    from pysword.canons import canons

    counts: dict[str, list[int]] = {}
    by_osis = {b.osis: b for b in BOOKS}
    for name in ("kjv", "nrsv", "nrsva"):
        for _, osis, _, chapters in canons[name]["ot"] + canons[name]["nt"]:
            book = by_osis.get(osis)
            if book is None or len(chapters) != book.chapters:
                continue
            known = counts.setdefault(book.id, [0] * book.chapters)
            counts[book.id] = [max(a, b) for a, b in zip(known, chapters)]
    return {k: tuple(v) for k, v in counts.items()}


def _expand(ref_range: RefRange, max_verses: int) -> list[Ref]:
    start, end = ref_range.start, ref_range.end
    if start.book != end.book:
        return [start, end]
    counts = _verse_counts()[start.book]
    refs = []
    for chapter in range(start.chapter, end.chapter + 1):
        first = start.verse if chapter == start.chapter else 1
        last = min(end.verse if chapter == end.chapter else counts[chapter - 1], counts[chapter - 1])
        refs.extend(Ref(start.book, chapter, verse) for verse in range(first, last + 1))
    if len(refs) > max_verses:
        return [r for r in (start, end) if r.verse <= counts[r.chapter - 1]]
    return refs


def verse_ids(ranges: Iterable[RefRange], max_range_verses: int = MAX_RANGE_VERSES) -> tuple[str, ...]:
    """Verse ids a list of ranges covers, in canonical order, each once. Verses no
    versification has are dropped, since a "Romans 3:40" in prose names nothing."""
    by_ordinal: dict[int, str] = {}
    for ref_range in ranges:
        for ref in _expand(ref_range, max_range_verses):
            by_ordinal[ref.ordinal] = ref.id
    return tuple(by_ordinal[o] for o in sorted(by_ordinal))


def cited_verse_ids(text: str) -> tuple[str, ...]:
    """Verse ids of every reference written in a text."""
    return verse_ids(find_references(text))
