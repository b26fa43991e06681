"""Pericope (section) boundaries and titles, and their assignment to a translation's verses.

The table is the Berean Standard Bible's section headings as shipped in the ``biblelib``
package (Clear Bible, CC BY 4.0): 2,436 ranges with BBCCCVVV verse ids (BB = 1..66).
"""

from __future__ import annotations

import bisect
import csv
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

ATTRIBUTION = "Pericope titles: Berean Standard Bible via biblelib (Clear Bible), CC BY 4.0"

Verse = tuple[int, int, int]  # (book number 1..66, chapter, verse)


@dataclass(frozen=True)
class Pericope:
    start_id: int  # BBCCCVVV
    end_id: int
    title: str

    @property
    def book(self) -> int:
        return self.start_id // 1_000_000


@dataclass(frozen=True)
class PericopeAssignment:
    # Per input verse: index into the pericope list, or None when its book has no pericope.
    indices: tuple[int | None, ...]
    # Positions (into the input verses) of verses no range covers, attached to a neighbour.
    filled: tuple[int, ...]

    def covered(self) -> set[int]:
        """Indices of the pericopes that received at least one verse."""
        return {i for i in self.indices if i is not None}


def verse_id(book: int, chapter: int, verse: int) -> int:
    return book * 1_000_000 + chapter * 1_000 + verse


def load_pericopes() -> list[Pericope]:
    """The BSB pericope table, in canonical order."""
    table = resources.files("biblelib.pericope") / "pericopes_eng_BSB.tsv"
    with table.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t")
        pericopes = [
            Pericope(int(row["startid"]), int(row["endid"]), row["title"].strip()) for row in rows
        ]
    return sorted(pericopes, key=lambda p: p.start_id)


def assign_pericopes(
    verses: Sequence[Verse], pericopes: Sequence[Pericope]
) -> PericopeAssignment:
    """Map each verse to the pericope whose range contains it.

    Versifications differ (KJV has verses the BSB table skips), so a verse outside every
    range joins the preceding pericope of its book, or the following one at a book's start.
    ``pericopes`` must be sorted by start_id and must not overlap.
    """
    starts = [p.start_id for p in pericopes]
    indices: list[int | None] = []
    filled: list[int] = []
    for position, (book, chapter, verse) in enumerate(verses):
        vid = verse_id(book, chapter, verse)
        before = bisect.bisect_right(starts, vid) - 1  # last pericope starting at or before
        if before >= 0 and vid <= pericopes[before].end_id:
            indices.append(before)
            continue
        if before >= 0 and pericopes[before].book == book:
            neighbour = before
        elif before + 1 < len(pericopes) and pericopes[before + 1].book == book:
            neighbour = before + 1
        else:
            indices.append(None)
            continue
        indices.append(neighbour)
        filled.append(position)
    return PericopeAssignment(tuple(indices), tuple(filled))
