"""Read a Bible from a SWORD zText module (OSIS markup) and turn verse markup into clean text.

Two steps, kept apart so each can be tested alone:

* ``read_sword_bible`` walks the module's versification and yields the raw OSIS markup of
  every verse slot of the 66-book canon, in canonical order, empty slots included.
* ``parse_verse`` turns one verse's markup into text, paragraph marks, headings and the
  Strong's numbers of its tagged words.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pysword.bible import ZTextModule, ZTextModule4
from pysword.canons import canons
from pysword.modules import SwordModules

# No verse of the 66 books comes near this (the longest, Esth 8:9, is ~530 characters);
# a longer one means non-verse matter leaked in, as the WEB glossary did after Rev 22:21.
MAX_VERSE_CHARS = 1_500

# The KJV versification lists exactly the 66 books of the Protestant canon, in order.
CANON_OSIS: tuple[str, ...] = tuple(
    book[1] for testament in ("ot", "nt") for book in canons["kjv"][testament]
)


@dataclass(frozen=True)
class RawVerse:
    book_osis: str
    chapter: int
    verse: int
    markup: str


@dataclass(frozen=True)
class ParsedVerse:
    text: str
    # Which marks open a paragraph here: "chapter" (verse 1), "x-p" (OSIS paragraph
    # milestone), "stanza" (<lb type="x-p"/> between poetry stanzas), "pilcrow" (KJV ¶).
    paragraph_marks: frozenset[str]
    strongs: tuple[str, ...]  # "G26", "H2617": distinct, in order of first use
    titles: tuple[str, ...]  # psalm superscriptions, acrostic letters, KJV subscriptions
    speakers: tuple[str, ...]  # Song of Songs speaker labels in WEB
    dropped_chars: int = 0  # text found after the end of the book and cut off (WEB glossary)

    @property
    def paragraph_start(self) -> bool:
        return bool(self.paragraph_marks)


# --- reading ---------------------------------------------------------------------------


class _BlockCache:
    """Keep inflated blocks: pysword inflates a whole book block again for every verse."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._inflate = functools.lru_cache(maxsize=8)(super()._decompressed_text)

    def _decompressed_text(self, testament, buf_num):
        return self._inflate(testament, buf_num)

    def chapter_markup(self, book_osis: str, chapter: int) -> tuple[str, list[str]]:
        """The chapter's heading entry and the markup of each of its verses."""
        [(testament, indices)] = self._structure.ref_to_indicies(
            books=book_osis, chapters=chapter
        ).items()
        # SWORD keeps one entry before verse 1 for the chapter heading.
        heading = self._text_for_index(testament, indices[0] - 1)
        return heading, [self._text_for_index(testament, i) for i in indices]


class CachedZText(_BlockCache, ZTextModule):
    pass


class CachedZText4(_BlockCache, ZTextModule4):
    pass


_DRIVERS = {"ztext": CachedZText, "ztext4": CachedZText4}


def _open_module(library_root: Path, module: str) -> _BlockCache:
    """Open a zText Bible module as its .conf describes it (versification included)."""
    confs = SwordModules(str(library_root)).parse_modules()
    if module not in confs:
        raise ValueError(
            f"SWORD module {module!r} not found under {library_root} "
            f"(found: {', '.join(sorted(confs)) or 'none'})"
        )
    conf = confs[module]
    driver = conf.get("moddrv", "").lower()
    if driver not in _DRIVERS:
        raise ValueError(f"SWORD module {module!r}: ModDrv={driver!r} is not a zText Bible")
    versification = conf.get("versification", "KJV").lower()
    if versification not in canons:
        raise ValueError(f"SWORD module {module!r}: unknown Versification={versification!r}")
    return _DRIVERS[driver](
        str(Path(library_root) / conf["datapath"]),
        versification=versification,
        encoding=conf.get("encoding", "utf-8").lower(),
        source_type=conf.get("sourcetype", "OSIS"),
        block_type=conf.get("blocktype", "BOOK"),
        compress_type=conf.get("compresstype", "ZIP"),
    )


def read_sword_bible(
    library_root: Path,
    module: str,
    select: Callable[[str, int], bool] | None = None,
) -> Iterator[RawVerse]:
    """Every verse slot of the module's versification for the 66 books, in canonical order.

    Empty slots come out with markup "". Verse 1 carries its chapter's heading entry in
    front of its own markup, so chapter-level titles and speakers are not lost.
    ``select(book_osis, chapter)`` restricts the read to some chapters.
    """
    bible = _open_module(library_root, module)
    books = {
        book.osis_name: book
        for testament in bible.get_structure().get_books().values()
        for book in testament
    }
    for osis in CANON_OSIS:
        book = books.get(osis)
        if book is None:
            continue
        for chapter in range(1, book.num_chapters + 1):
            if select is not None and not select(osis, chapter):
                continue
            heading, verses = bible.chapter_markup(osis, chapter)
            for number, markup in enumerate(verses, start=1):
                if number == 1 and heading.strip():
                    markup = heading + markup
                yield RawVerse(osis, chapter, number, markup)


# --- parsing ---------------------------------------------------------------------------

_TOKEN = re.compile(r"<(/?)([A-Za-z]+)([^>]*?)(/?)>|([^<]+)")
_ANY_TAG = re.compile(r"<[^>]*>")
_STRONG = re.compile(r"strong:([GH])0*(\d+)")
# Anything after the end of the book (or a glossary/introduction division) is not the
# verse's: SWORD appends matter it has no verse slot for to the last verse.
_END_OF_BOOK = re.compile(
    r'<div\b[^>]*\btype="(?:book|bookGroup|glossary|introduction|front|back|appendix)"'
)

# Elements whose words run on inside the verse; any other tag separates words.
_INLINE = {
    "w", "q", "transChange", "divineName", "foreign", "name", "seg", "hi",
    "add", "abbr", "rdg", "reference", "catchWord", "inscription", "mentioned",
}
_DIVERTED = {"note", "title", "speaker"}

# Where a footnote was removed the module often has no space ("God<note/>created"), so
# the gap becomes a space unless closing punctuation follows it.
_GAP = "\x00"
_GAP_BEFORE_CLOSER = re.compile(r"\s*" + _GAP + r"\s*(?=[,.;:!?)\]”’])")
_SPACE = re.compile(r"\s+")


def _clean(text: str) -> str:
    text = _GAP_BEFORE_CLOSER.sub("", text).replace(_GAP, " ")
    return _SPACE.sub(" ", text).strip()


def parse_verse(markup: str, *, chapter_start: bool = False) -> ParsedVerse:
    """Clean text and structure of one verse's OSIS markup.

    Footnotes and cross-references are dropped with their content; titles and speaker
    labels are kept apart from the text; the words of <w>, <transChange>, <divineName>
    and <q> stay. ``chapter_start`` marks verse 1, which opens a paragraph even though
    the modules put no mark there.
    """
    dropped_chars = 0
    end = _END_OF_BOOK.search(markup)
    if end:
        dropped_chars = len(_clean(_ANY_TAG.sub(" ", markup[end.start() :])))
        markup = markup[: end.start()]

    scan = _VerseScan({"chapter"} if chapter_start else set())
    for closing, name, attrs, empty, text in _TOKEN.findall(markup):
        if text:
            scan.text(text)
        elif name in _DIVERTED and not empty:
            scan.divert(closing, name)
        else:
            scan.tag(closing, name, attrs)
    return ParsedVerse(
        text=_clean("".join(scan.body)),
        paragraph_marks=frozenset(scan.marks),
        strongs=tuple(scan.strongs),
        titles=tuple(t for t in scan.titles if t),
        speakers=tuple(s for s in scan.speakers if s),
        dropped_chars=dropped_chars,
    )


@dataclass
class _VerseScan:
    """One verse's markup read token by token: the text, and where it goes while a note (dropped),
    a title or a speaker label (kept apart) is open."""

    marks: set[str]
    strongs: dict[str, None] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    # Open note/title/speaker elements, each with the buffer its text goes to (None: dropped).
    diverted: list[tuple[str, list[str] | None]] = field(default_factory=list)
    seen_text: bool = False

    def sink(self) -> list[str] | None:
        if not self.diverted:
            return self.body
        if any(kind == "note" for kind, _ in self.diverted):
            return None
        return self.diverted[-1][1]

    def text(self, text: str) -> None:
        out = self.sink()
        text = html.unescape(text)
        if out is self.body:
            if "¶" in text:
                self.marks.add("pilcrow")
                text = text.replace("¶", " ")
            self.seen_text = self.seen_text or bool(text.strip())
        if out is not None:
            out.append(text)

    def divert(self, closing: str, name: str) -> None:
        if not closing:
            self.diverted.append((name, None if name == "note" else []))
        elif self.diverted and self.diverted[-1][0] == name:
            kind, parts = self.diverted.pop()
            if parts is not None and self.sink() is self.body:
                (self.titles if kind == "title" else self.speakers).append(_clean("".join(parts)))
            if not self.diverted:
                self.body.append(_GAP)

    def tag(self, closing: str, name: str, attrs: str) -> None:
        out = self.sink()
        if name == "w" and not closing and out is not None:
            for letter, number in _STRONG.findall(attrs):
                self.strongs[f"{letter}{number}"] = None
        if out is self.body and not self.seen_text and 'type="x-p"' in attrs:
            if name == "div" and "sID=" in attrs:
                self.marks.add("x-p")
            elif name == "lb":
                self.marks.add("stanza")
        if name not in _INLINE and out is not None:
            out.append(" ")
