"""The 66-book Protestant canon as plain data, with a forgiving name lookup."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Book:
    number: int  # 1..66, the BB of BBCCCVVV ids
    osis: str  # "1Sam"
    id: str  # lower-case OSIS: "1sam"
    name: str  # "1 Samuel"
    testament: str  # "old" | "new"
    genre: str
    chapters: int
    aliases: tuple[str, ...]


# osis, English name, chapters, genre, extra abbreviations. For numbered books the
# abbreviations are stems ("sam"); every prefix form ("1 ", "1", "i ", "first ") is added.
_CANON = (
    ("Gen", "Genesis", 50, "law", ("ge", "gn")),
    ("Exod", "Exodus", 40, "law", ("exo", "ex")),
    ("Lev", "Leviticus", 27, "law", ("le", "lv")),
    ("Num", "Numbers", 36, "law", ("nu", "nm", "nb")),
    ("Deut", "Deuteronomy", 34, "law", ("dt", "deu")),
    ("Josh", "Joshua", 24, "history", ("jos", "jsh")),
    ("Judg", "Judges", 21, "history", ("jdg", "jdgs", "jg")),
    ("Ruth", "Ruth", 4, "history", ("rth", "ru")),
    ("1Sam", "1 Samuel", 31, "history", ("sa", "sm")),
    ("2Sam", "2 Samuel", 24, "history", ("sa", "sm")),
    ("1Kgs", "1 Kings", 22, "history", ("ki", "kin", "kg")),
    ("2Kgs", "2 Kings", 25, "history", ("ki", "kin", "kg")),
    ("1Chr", "1 Chronicles", 29, "history", ("chron", "ch")),
    ("2Chr", "2 Chronicles", 36, "history", ("chron", "ch")),
    ("Ezra", "Ezra", 10, "history", ("ezr",)),
    ("Neh", "Nehemiah", 13, "history", ("ne",)),
    ("Esth", "Esther", 10, "history", ("est", "es")),
    ("Job", "Job", 42, "wisdom", ("jb",)),
    ("Ps", "Psalms", 150, "poetry", ("psalm", "psa", "pss", "psm")),
    ("Prov", "Proverbs", 31, "wisdom", ("pro", "prv", "pr")),
    ("Eccl", "Ecclesiastes", 12, "wisdom", ("eccles", "ecc", "ec", "qoh", "qoheleth")),
    ("Song", "Song of Songs", 8, "poetry",
     ("song of solomon", "canticles", "canticle of canticles", "cant", "sos", "sng")),
    ("Isa", "Isaiah", 66, "prophecy", ()),
    ("Jer", "Jeremiah", 52, "prophecy", ("je", "jr")),
    ("Lam", "Lamentations", 5, "poetry", ()),
    ("Ezek", "Ezekiel", 48, "prophecy", ("eze", "ezk")),
    ("Dan", "Daniel", 12, "prophecy", ("da", "dn")),
    ("Hos", "Hosea", 14, "prophecy", ("ho",)),
    ("Joel", "Joel", 3, "prophecy", ("jl",)),
    ("Amos", "Amos", 9, "prophecy", ()),
    ("Obad", "Obadiah", 1, "prophecy", ("ob", "oba")),
    ("Jonah", "Jonah", 4, "prophecy", ("jon", "jnh")),
    ("Mic", "Micah", 7, "prophecy", ("mc",)),
    ("Nah", "Nahum", 3, "prophecy", ("na",)),
    ("Hab", "Habakkuk", 3, "prophecy", ("hb",)),
    ("Zeph", "Zephaniah", 3, "prophecy", ("zep", "zp")),
    ("Hag", "Haggai", 2, "prophecy", ("hg",)),
    ("Zech", "Zechariah", 14, "prophecy", ("zec", "zc")),
    ("Mal", "Malachi", 4, "prophecy", ("ml",)),
    ("Matt", "Matthew", 28, "gospel", ("mt", "mat")),
    ("Mark", "Mark", 16, "gospel", ("mk", "mrk", "mar")),
    ("Luke", "Luke", 24, "gospel", ("lk", "luk")),
    ("John", "John", 21, "gospel", ("jn", "jhn", "joh")),
    ("Acts", "Acts", 28, "history", ("ac", "acts of the apostles")),
    ("Rom", "Romans", 16, "epistle", ("ro", "rm")),
    ("1Cor", "1 Corinthians", 16, "epistle", ("co",)),
    ("2Cor", "2 Corinthians", 13, "epistle", ("co",)),
    ("Gal", "Galatians", 6, "epistle", ("ga",)),
    ("Eph", "Ephesians", 6, "epistle", ("ephes",)),
    ("Phil", "Philippians", 4, "epistle", ("php", "pp")),
    ("Col", "Colossians", 4, "epistle", ()),
    ("1Thess", "1 Thessalonians", 5, "epistle", ("thes", "th")),
    ("2Thess", "2 Thessalonians", 3, "epistle", ("thes", "th")),
    ("1Tim", "1 Timothy", 6, "epistle", ("ti", "tm")),
    ("2Tim", "2 Timothy", 4, "epistle", ("ti", "tm")),
    ("Titus", "Titus", 3, "epistle", ("tit",)),
    ("Phlm", "Philemon", 1, "epistle", ("phm", "philem", "phile")),
    ("Heb", "Hebrews", 13, "epistle", ()),
    ("Jas", "James", 5, "epistle", ("jm",)),
    ("1Pet", "1 Peter", 5, "epistle", ("pe", "pt")),
    ("2Pet", "2 Peter", 3, "epistle", ("pe", "pt")),
    ("1John", "1 John", 5, "epistle", ("jn", "jhn", "jo", "joh")),
    ("2John", "2 John", 1, "epistle", ("jn", "jhn", "jo", "joh")),
    ("3John", "3 John", 1, "epistle", ("jn", "jhn", "jo", "joh")),
    ("Jude", "Jude", 1, "epistle", ("jud", "jd")),
    ("Rev", "Revelation", 22, "apocalyptic",
     ("revelations", "re", "rv", "the revelation", "apocalypse")),
)

_ORDINALS = {"1": ("i", "first"), "2": ("ii", "second"), "3": ("iii", "third")}
_ORDINAL_WORDS = {
    "i": "1", "first": "1", "1st": "1",
    "ii": "2", "second": "2", "2nd": "2",
    "iii": "3", "third": "3", "3rd": "3",
}


def _aliases(osis: str, name: str, extras: tuple[str, ...]) -> tuple[str, ...]:
    if not name[0].isdigit():
        spellings = (name.lower(), osis.lower(), *extras)
    else:
        digit, stem = name.split(" ", 1)
        stems = (stem.lower(), osis[1:].lower(), *extras)
        prefixes = (digit + " ", digit, *(word + " " for word in _ORDINALS[digit]))
        spellings = tuple(prefix + s for s in stems for prefix in prefixes)
    return tuple(dict.fromkeys(spellings))


BOOKS: tuple[Book, ...] = tuple(
    Book(
        number=number,
        osis=osis,
        id=osis.lower(),
        name=name,
        testament="old" if number <= 39 else "new",
        genre=genre,
        chapters=chapters,
        aliases=_aliases(osis, name, extras),
    )
    for number, (osis, name, chapters, genre, extras) in enumerate(_CANON, start=1)
)

_LEADING_ORDINAL = re.compile(r"^(" + "|".join(_ORDINAL_WORDS) + r")\s+")


def normalise_book_name(text: str) -> str:
    """The lookup key for a typed book name: "I Pet." and "1pet" both give "1pet"."""
    key = re.sub(r"\s+", " ", text.lower().replace(".", " ")).strip()
    key = _LEADING_ORDINAL.sub(lambda m: _ORDINAL_WORDS[m[1]], key)
    return key.replace(" ", "")


_BY_ID = {book.id: book for book in BOOKS}
_BY_OSIS = {book.osis: book for book in BOOKS}
_BY_ALIAS = {normalise_book_name(alias): book for book in BOOKS for alias in book.aliases}


def book_by_id(book_id: str) -> Book:
    try:
        return _BY_ID[book_id]
    except KeyError:
        raise KeyError(f"unknown book id {book_id!r}") from None


def book_by_osis(osis: str) -> Book:
    try:
        return _BY_OSIS[osis]
    except KeyError:
        raise KeyError(f"unknown OSIS book {osis!r}") from None


def book_by_number(number: int) -> Book:
    if not 1 <= number <= len(BOOKS):
        raise KeyError(f"no book number {number}; the canon has books 1 to {len(BOOKS)}")
    return BOOKS[number - 1]


def find_book(text: str) -> Book | None:
    """The book a person means by `text` ("Rom.", "I Peter", "song of solomon"), or None."""
    return _BY_ALIAS.get(normalise_book_name(text))
