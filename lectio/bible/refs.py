"""Verse references: ids such as "rom_8_28" and a parser for what people type."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from lectio.bible.books import BOOKS, Book, book_by_id, find_book

# Verse counts live in the database, not here; a range ending at verse 999 covers
# the rest of any chapter once it is resolved by ordinal.
END_OF_CHAPTER = 999


class UnknownReference(ValueError):
    """Text shaped like a reference that names no real book, chapter or verse."""


def _book(book_id: str) -> Book:
    try:
        return book_by_id(book_id)
    except KeyError:
        raise UnknownReference(f"unknown book id {book_id!r}") from None


_ID = re.compile(r"([0-9a-z]+)_(\d+)_(\d+)")


@functools.total_ordering
@dataclass(frozen=True)
class Ref:
    book: str  # lower-case OSIS id, "rom"
    chapter: int
    verse: int

    def __post_init__(self) -> None:
        book = _book(self.book)
        if not 1 <= self.chapter <= book.chapters:
            plural = "" if book.chapters == 1 else "s"
            raise UnknownReference(
                f"{book.name} has {book.chapters} chapter{plural}; "
                f"there is no {book.name} {self.chapter}"
            )
        if not 1 <= self.verse <= END_OF_CHAPTER:
            raise UnknownReference(f"there is no verse {self.verse} in {book.name} {self.chapter}")

    @classmethod
    def from_id(cls, ref_id: str) -> Ref:
        match = _ID.fullmatch(ref_id)
        if match is None:
            raise ValueError(
                f"malformed verse id {ref_id!r}: expected book_chapter_verse such as 'rom_8_28'"
            )
        return cls(match[1], int(match[2]), int(match[3]))

    @classmethod
    def from_ordinal(cls, ordinal: int) -> Ref:
        """From a BBCCCVVV number, the form pericope tables use."""
        number, rest = divmod(ordinal, 1_000_000)
        if not 1 <= number <= len(BOOKS):
            raise UnknownReference(f"no book number {number} in verse ordinal {ordinal}")
        return cls(BOOKS[number - 1].id, rest // 1_000, rest % 1_000)

    @property
    def id(self) -> str:
        return f"{self.book}_{self.chapter}_{self.verse}"

    @property
    def ordinal(self) -> int:
        return _book(self.book).number * 1_000_000 + self.chapter * 1_000 + self.verse

    @property
    def label(self) -> str:
        book = _book(self.book)
        if book.chapters == 1:
            return f"{book.name} {self.verse}"
        return f"{book.name} {self.chapter}:{self.verse}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Ref):
            return NotImplemented
        return self.ordinal < other.ordinal


@dataclass(frozen=True)
class RefRange:
    start: Ref
    end: Ref

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise UnknownReference(f"the range {self.start.id} to {self.end.id} runs backwards")

    @property
    def start_ordinal(self) -> int:
        return self.start.ordinal

    @property
    def end_ordinal(self) -> int:
        return self.end.ordinal

    def __contains__(self, ref: Ref) -> bool:
        return self.start_ordinal <= ref.ordinal <= self.end_ordinal

    @property
    def label(self) -> str:
        start, end = self.start, self.end
        if start.book != end.book:
            return f"{start.label}-{end.label}"
        book = _book(start.book)
        if start.verse == 1 and end.verse == END_OF_CHAPTER:
            if book.chapters == 1:
                return book.name
            if start.chapter == end.chapter:
                return f"{book.name} {start.chapter}"
            return f"{book.name} {start.chapter}-{end.chapter}"
        if start == end:
            return start.label
        if start.chapter == end.chapter:
            return f"{start.label}-{end.verse}"
        return f"{start.label}-{end.chapter}:{end.verse}"


# c1[:v1][-c2[:v2]], with hyphen, en dash or em dash
_SPEC = (
    r"(?P<c1>\d+)(?:\s*:\s*(?P<v1>\d+))?"
    r"(?:\s*[-\u2013\u2014]\s*(?P<c2>\d+)(?:\s*:\s*(?P<v2>\d+))?)?(?!\d)"
)
_PIECE = re.compile(rf"(?:(?P<name>.*?[^\W\d_]\.?)\s*)?{_SPEC}")
_SPEC_RE = re.compile(_SPEC)
_SEPARATOR = re.compile(r"\s*([;,])\s*")
# One word, perhaps numbered: shaped enough like a book name to call it an unknown book.
_BOOKISH = re.compile(
    r"(?:[1-3]|i{1,3}|first|second|third|1st|2nd|3rd)?\s*[^\W\d_]+\.?", re.IGNORECASE
)
_CHAPTER_WORD = re.compile(r"\s+(?:ch|chap|chapter)\.?$", re.IGNORECASE)

# A piece is (separator before it, the book it names or None to carry on, its spec match).
_Piece = tuple[str, Book | None, re.Match]


def _range(book: Book, chapter: int, verses: bool, match: re.Match) -> RefRange:
    """One spec; `verses` says a bare number is a verse of `chapter`, not a chapter."""
    c1, v1, c2, v2 = (None if g is None else int(g) for g in match.group("c1", "v1", "c2", "v2"))
    if v1 is None and not verses:
        start = (c1, 1)
        last = (c1 if c2 is None else c2, END_OF_CHAPTER)
    else:
        start = (c1, v1) if v1 is not None else (chapter, c1)
        last = (start[0], start[1] if c2 is None else c2)
    end = (c2, v2) if v2 is not None else last
    return RefRange(Ref(book.id, *start), Ref(book.id, *end))


def _ranges(pieces: list[_Piece]) -> Iterator[RefRange]:
    """Carry book and chapter along as people do: "Rom 5:1-5, 8; 6:3" or "Ps 23, 24"."""
    book, chapter, verses = None, 0, False
    for separator, named, match in pieces:
        if named is not None:
            book, verses = named, False
        elif separator == ";":
            verses = False
        if book.chapters == 1:
            chapter, verses = 1, True
        found = _range(book, chapter, verses, match)
        chapter, verses = found.end.chapter, found.end.verse != END_OF_CHAPTER
        yield found


def _name_to_book(name: str, has_verse: bool) -> Book | None:
    book = find_book(name) or find_book(_CHAPTER_WORD.sub("", name))
    if book is None and has_verse and _BOOKISH.fullmatch(name.strip()):
        raise UnknownReference(f"unknown book {name.strip()!r}")
    return book


def parse_reference(text: str) -> list[RefRange] | None:
    """The ranges `text` names when the whole of it is a reference, else None.

    Raises UnknownReference for a reference to a book, chapter or verse that does not exist.
    """
    parts = _SEPARATOR.split(text.strip().rstrip("."))
    matches = [
        (parts[i - 1] if i else ";", _PIECE.fullmatch(parts[i])) for i in range(0, len(parts), 2)
    ]
    if any(match is None for _, match in matches) or matches[0][1]["name"] is None:
        return None
    pieces: list[_Piece] = []
    for separator, match in matches:
        book = None
        if match["name"] is not None:
            book = _name_to_book(match["name"], match["v1"] is not None)
            if book is None:
                return None
        pieces.append((separator, book, match))
    return list(_ranges(pieces))


_ALIAS_PATTERNS = {
    r"\.?\s+".join(map(re.escape, alias.split())) for book in BOOKS for alias in book.aliases
}
_BOOK_IN_PROSE = re.compile(
    r"(?<!\w)(?:" + "|".join(sorted(_ALIAS_PATTERNS, key=len, reverse=True)) + r")(?!\w)\.?\s*",
    re.IGNORECASE,
)


def find_references(text: str) -> list[RefRange]:
    """References embedded in prose, such as "as Paul says in Rom. 8:28-30 and 1 Cor 13:4".

    Only a book followed by chapter:verse counts (a bare verse for one-chapter books), so
    "Job 5" or "in 2 weeks" are not taken; mentions of verses that do not exist are skipped.
    """
    found: list[RefRange] = []
    position = 0
    while book_match := _BOOK_IN_PROSE.search(text, position):
        position = book_match.end()
        book = find_book(book_match[0])
        spec = _SPEC_RE.match(text, position)
        if spec is None or (spec["v1"] is None and book.chapters > 1):
            continue
        pieces: list[_Piece] = [(";", book, spec)]
        position = spec.end()
        while (separator := _SEPARATOR.match(text, position)) and not _BOOK_IN_PROSE.match(
            text, separator.end()
        ):
            spec = _SPEC_RE.match(text, separator.end())
            if spec is None or (separator[1] == ";" and spec["v1"] is None and book.chapters > 1):
                break
            pieces.append((separator[1], None, spec))
            position = spec.end()
        try:
            for ref_range in _ranges(pieces):
                found.append(ref_range)
        except UnknownReference:
            pass  # "Romans 17:1" in prose is a typo or not a reference; keep what came before
    return found
