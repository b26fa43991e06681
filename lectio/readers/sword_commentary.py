"""Read a SWORD commentary module (zCom, zCom4) and turn an entry's OSIS markup into blocks.

Two steps, kept apart so each can be tested alone:

* ``read_sword_commentary`` walks the module's versification in canonical order and yields one
  ``RawEntry`` per stored comment. A commentary stores a comment on a verse range by repeating
  it in every verse slot of the range (Matthew Henry's "Verses 28-31" sits in four slots), so a
  run of identical consecutive slots of one chapter is one entry. Book and chapter heading slots
  are read too: some modules keep introductions there (chapter 0, verse 0 below).
* ``parse_blocks`` turns one entry's markup into titles and paragraphs of clean text.
* ``osis_ref_ids`` turns an osisRef attribute (proper OSIS, or the Scofield module's looser
  "ro 8:17 ro 8:21") into verse ids, ranges expanded with the module's verse counts.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pysword.canons import canons
from pysword.modules import SwordModules

from lectio.bible.books import Book, book_by_id, find_book
from lectio.readers.sword_bible import CANON_OSIS, CachedZText, CachedZText4

# Index record sizes: zCom keeps (block, offset, size) as 4+4+2 bytes, zCom4 as 4+4+4.
_DRIVER_BY_RECORD = {10: CachedZText, 12: CachedZText4}
_DRIVER_BY_NAME = {"zcom": CachedZText, "zcom4": CachedZText4}


@dataclass(frozen=True)
class RawEntry:
    book_osis: str
    chapter: int  # 0: the book's heading slot (a book introduction)
    first_verse: int  # 0: the chapter's heading slot
    last_verse: int  # the last slot of the run holding this same markup
    markup: str


@dataclass(frozen=True)
class CommentaryModule:
    name: str  # as the .conf spells it ("MHCC", "TDavid")
    description: str
    versification: str
    chapter_lengths: dict[str, tuple[int, ...]]  # OSIS book → verses per chapter


# --- reading ---------------------------------------------------------------------------


def _conf(library_root: Path, module: str) -> tuple[str, dict]:
    confs = SwordModules(str(library_root)).parse_modules()
    by_lower = {name.lower(): name for name in confs}
    if module.lower() not in by_lower:
        raise ValueError(
            f"SWORD module {module!r} not found under {library_root} "
            f"(found: {', '.join(sorted(confs)) or 'none'})"
        )
    name = by_lower[module.lower()]
    return name, confs[name]


def _testament_slots(versification: str, testament: str) -> int:
    # pysword's layout: two testament heading slots, then per book a heading slot, and per
    # chapter a heading slot followed by its verses.
    return 2 + sum(1 + len(book[3]) + sum(book[3]) for book in canons[versification][testament])


def _driver(data_path: Path, conf: dict, versification: str):
    """The zText reader whose index record size matches the files on disk.

    The .conf's ModDrv is not trusted: mhcc.conf says zCom4 (12-byte records) but ships 10-byte
    ones, and reading it as zCom4 garbles every entry.
    """
    block = conf.get("blocktype", "BOOK").upper()
    letter = block[0].lower()
    for testament in ("ot", "nt"):
        index = data_path / f"{testament}.{letter}zv"
        if index.is_file() and index.stat().st_size:
            slots = _testament_slots(versification, testament)
            for size, driver in _DRIVER_BY_RECORD.items():
                if index.stat().st_size == slots * size:
                    return driver, block
            raise ValueError(
                f"{index} holds {index.stat().st_size} bytes, which is not {slots} index records "
                f"of the {versification} versification"
            )
    driver = _DRIVER_BY_NAME.get(conf.get("moddrv", "").lower())
    if driver is None:
        raise ValueError(f"ModDrv={conf.get('moddrv')!r} is not a zCom commentary")
    return driver, block


def open_commentary(library_root: Path, module: str):
    """(module facts, pysword reader) for a zCom/zCom4 commentary under a SWORD library."""
    name, conf = _conf(library_root, module)
    if conf.get("moddrv", "").lower() not in _DRIVER_BY_NAME:
        raise ValueError(f"SWORD module {name!r}: ModDrv={conf.get('moddrv')!r} is not a zCom commentary")
    versification = conf.get("versification", "KJV").lower()
    if versification not in canons:
        raise ValueError(f"SWORD module {name!r}: unknown Versification={versification!r}")
    data_path = Path(library_root) / conf["datapath"]
    driver, block = _driver(data_path, conf, versification)
    reader = driver(
        str(data_path),
        versification=versification,
        encoding=conf.get("encoding", "utf-8").lower(),
        source_type=conf.get("sourcetype", "OSIS"),
        block_type=block,
        compress_type=conf.get("compresstype", "ZIP"),
    )
    lengths = {
        book[1]: tuple(book[3]) for testament in ("ot", "nt") for book in canons[versification][testament]
    }
    facts = CommentaryModule(name, conf.get("description", name), versification, lengths)
    return facts, reader


def read_sword_commentary(
    library_root: Path,
    module: str,
    select: Callable[[str, int], bool] | None = None,
) -> tuple[CommentaryModule, list[RawEntry], int]:
    """The module's facts, its entries in canonical order, and how many slots held text.

    ``select(book_osis, chapter)`` restricts the read to some chapters; a book's heading slot
    is chapter 0.
    """
    facts, reader = open_commentary(library_root, module)
    structure = reader.get_structure()
    books = {book.osis_name: book for testament in structure.get_books().values() for book in testament}
    entries: list[RawEntry] = []
    slots_with_text = 0
    for osis in CANON_OSIS:
        book = books.get(osis)
        if book is None:
            continue
        for chapter in range(1, book.num_chapters + 1):
            want_book_heading = chapter == 1 and (select is None or select(osis, 0))
            want_chapter = select is None or select(osis, chapter)
            if not (want_book_heading or want_chapter):
                continue
            [(testament, indices)] = structure.ref_to_indicies(books=osis, chapters=chapter).items()
            slots: list[tuple[int, int, int]] = []  # (chapter, verse, index); heading slots first
            if want_book_heading:
                slots.append((0, 0, indices[0] - 2))
            if want_chapter:
                slots.append((chapter, 0, indices[0] - 1))
                slots.extend((chapter, verse, index) for verse, index in enumerate(indices, start=1))
            for chapter_no, verse, index in slots:
                markup = reader._text_for_index(testament, index)
                if not _has_text(markup):
                    continue
                slots_with_text += 1
                last = entries[-1] if entries else None
                if (
                    last is not None
                    and verse > 0
                    and (last.book_osis, last.chapter) == (osis, chapter_no)
                    and last.last_verse == verse - 1
                    and last.markup == markup
                ):
                    entries[-1] = RawEntry(osis, chapter_no, last.first_verse, verse, markup)
                else:
                    entries.append(RawEntry(osis, chapter_no, verse, verse, markup))
    return facts, entries, slots_with_text


_ANY_TAG = re.compile(r"<[^>]*>")


def _has_text(markup: str) -> bool:
    # Heading slots often hold only milestones (<chapter/>, empty <div/>s): nothing to index.
    return bool(markup) and bool(_ANY_TAG.sub("", markup).strip())


# --- markup → blocks -------------------------------------------------------------------


@dataclass(frozen=True)
class Title:
    kind: str  # the OSIS title type: "x-s", "x-s2", "x-IS", "x-ms", …
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str
    lead: str = ""  # the bold run the paragraph opens with (a Scofield headword, "Verse 3.")
    refs: tuple[str, ...] = ()  # osisRef attributes of the <reference>s inside, in order


Block = Title | Paragraph

_TOKEN = re.compile(r"<(/?)([A-Za-z]+)([^>]*?)(/?)>|([^<]+)")
_ATTR = re.compile(r'([A-Za-z]+)="([^"]*)"')
_SPACE = re.compile(r"[ \t\r\f\v]+")


def _clean(text: str) -> str:
    lines = [_SPACE.sub(" ", line).strip() for line in text.split("\n")]
    return "\n".join(line for line in lines if line)


def parse_blocks(markup: str) -> list[Block]:
    """Titles and paragraphs of one entry.

    Paragraph breaks come from OSIS paragraph milestones (<div type="x-p"/>), <lg>, <list>
    and titles; list items, table rows and poetry lines become lines inside a paragraph. A list
    stays with the sentence that introduces it (one ending in ":"), so the items keep their
    meaning. Text inside <note> is dropped; <reference> keeps its visible text and its osisRef.
    """
    scan = _EntryScan()
    for closing, name, attrs, empty, text in _TOKEN.findall(markup):
        if text:
            scan.text(text)
        else:
            scan.tag(closing, name, dict(_ATTR.findall(attrs)), empty)
    scan.flush()
    return _attach_lists(scan.blocks, scan.list_openers)


@dataclass
class _EntryScan:
    """One entry's markup read token by token into blocks: the paragraph being gathered, its bold
    lead, its references, and whether a note (dropped) or a title is open."""

    blocks: list[Block] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    highlights: list[str] = field(default_factory=list)  # the open <hi>s' types
    title_parts: list[str] = field(default_factory=list)
    list_openers: set[int] = field(default_factory=set)  # positions in `blocks` of paragraphs that open with a list
    bold: bool = False
    lead_open: bool = True
    title: str | None = None  # the open title's type
    note: int = 0  # how deep inside notes
    list_start: bool = False

    def flush(self) -> None:
        text = _clean("".join(self.parts))
        if text:
            if self.list_start:
                self.list_openers.add(len(self.blocks))
            self.blocks.append(Paragraph(text, _clean("".join(self.lead)), tuple(self.refs)))
        self.parts.clear()
        self.lead.clear()
        self.refs.clear()
        self.lead_open = True
        self.list_start = False

    def text(self, text: str) -> None:
        if self.note:
            return
        text = html.unescape(text)
        if self.title is not None:
            self.title_parts.append(text)
            return
        self.parts.append(text)
        if text.strip():
            if self.bold and self.lead_open:
                self.lead.append(text)
            else:
                self.lead_open = False
        elif self.lead:
            self.lead.append(text)

    def tag(self, closing: str, name: str, attributes: dict[str, str], empty: str) -> None:
        if name == "note":
            if not empty:
                self.note += -1 if closing else 1
            return
        if self.note:
            return
        if name == "title" and not empty:
            self._title(closing, attributes)
        elif self.title is not None:
            return
        elif name == "hi" and not empty:
            # A closing tag names no type, so the open <hi>s are kept to know what closes.
            if not closing:
                self.highlights.append(attributes.get("type", ""))
            elif self.highlights:
                self.highlights.pop()
            self.bold = "bold" in self.highlights
        else:
            self._structure(closing, name, attributes, empty)

    def _title(self, closing: str, attributes: dict[str, str]) -> None:
        if not closing:
            self.flush()
            self.title = attributes.get("type", "")
            self.title_parts.clear()
        elif self.title is not None:
            title = _clean(" ".join(self.title_parts).replace("\n", " "))
            if title:
                self.blocks.append(Title(self.title, title))
            self.title = None

    def _structure(self, closing: str, name: str, attributes: dict[str, str], empty: str) -> None:
        if name == "reference" and not closing and attributes.get("osisRef"):
            self.refs.append(attributes["osisRef"])
        elif name == "div" and attributes.get("type") == "x-p" or name in ("lg", "p"):
            self.flush()
        elif name == "list" and not closing and not empty:
            self.flush()
            self.list_start = True
        elif name == "list" and closing:
            self.flush()
        elif name in ("item", "row", "l", "lb") and not closing:
            if "".join(self.parts).strip():
                self.parts.append("\n")
        elif name == "cell" and closing:
            self.parts.append(" ")


def _attach_lists(blocks: list[Block], list_openers: set[int]) -> list[Block]:
    """Join a list to the paragraph before it when that paragraph introduces it (ends in ':')."""
    out: list[Block] = []
    for position, block in enumerate(blocks):
        previous = out[-1] if out else None
        if (
            position in list_openers
            and isinstance(previous, Paragraph)
            and previous.text.rstrip().endswith(":")
        ):
            out[-1] = Paragraph(f"{previous.text}\n{block.text}", previous.lead, previous.refs + block.refs)
        else:
            out.append(block)
    return out


# --- osisRef → verse ids -------------------------------------------------------------

# Abbreviations of the SWORD/Online Bible style (Scofield's osisRefs) that lectio.bible.books reads
# otherwise or not at all: there "jud" is Judges, not Jude.
_OSIS_BOOK_OVERRIDES = {
    "jud": "judg", "mr": "mark", "lu": "luke", "de": "deut", "joe": "joel",
    "am": "amos", "so": "song", "la": "lam", "is": "isa",
}
_WORK_PREFIX = re.compile(r"^[A-Za-z][\w-]*:(?=\s*[1-3]?[A-Za-z])")
_POINT = re.compile(r"(?:(?P<book>[1-3]?[A-Za-z]+)[\s.]*)?(?P<c>\d+)(?:[:.](?P<v>\d+))?")
# Items are separated by a space after a verse number: "ro 8:17 ro 8:21", "Rev 4:1 11:1".
_ITEM_BREAK = re.compile(r"(?<=\d)\s+(?=[1-3]?[A-Za-z]|\d+[:.]\d+)")


def _osis_book(token: str) -> Book | None:
    key = token.lower()
    if key in _OSIS_BOOK_OVERRIDES:
        return book_by_id(_OSIS_BOOK_OVERRIDES[key])
    return find_book(token)


def osis_ref_ids(osis_ref: str, lengths: dict[str, tuple[int, ...]]) -> tuple[list[str], int]:
    """(verse ids, items not understood) of one osisRef attribute.

    Reads proper OSIS ("Rom.8.28", "Ps.57.7-Ps.57.11") and the looser form of the Scofield
    module ("ro 8:17 ro 8:21", "jer 4:23-27", "ro 3:21-ro 5:11", "ge 1", "Scofield:Ro 5:21").
    A chapter expands to its verses; a book or a verse the versification lacks is not understood.
    """
    text = _WORK_PREFIX.sub("", osis_ref.strip())
    ids: list[str] = []
    failed = 0
    book: Book | None = None
    for item in _ITEM_BREAK.split(text):
        start_text, _, end_text = item.strip().partition("-")
        start = _POINT.fullmatch(start_text.strip())
        if start is None:
            failed += 1
            continue
        book = _osis_book(start["book"]) if start["book"] else book
        if book is None:
            failed += 1
            continue
        c1, v1 = int(start["c"]), int(start["v"]) if start["v"] else None
        end_book, c2, v2 = book, c1, v1
        if end_text:
            end = _POINT.fullmatch(end_text.strip())
            if end is None:
                failed += 1
                continue
            end_book = _osis_book(end["book"]) if end["book"] else book
            if end_book is None:
                failed += 1
                continue
            if end["v"]:
                c2, v2 = int(end["c"]), int(end["v"])
            elif v1 is not None and not end["book"]:
                v2 = int(end["c"])  # "4:23-27": a verse of the same chapter
            else:
                c2, v2 = int(end["c"]), None
        found = _expand(book, c1, v1, end_book, c2, v2, lengths)
        if found is None:
            failed += 1
        else:
            ids.extend(found)
    return ids, failed


def _expand(book: Book, c1: int, v1: int | None, end_book: Book, c2: int, v2: int | None, lengths):
    if end_book.number != book.number:
        return None  # a range across books: none in these modules, and too broad to mean much
    chapters = lengths.get(book.osis, ())
    if not (1 <= c1 <= len(chapters) and 1 <= c2 <= len(chapters)) or c2 < c1:
        return None
    v1 = v1 or 1
    v2 = v2 or chapters[c2 - 1]
    if not (1 <= v1 <= chapters[c1 - 1] and 1 <= v2 <= chapters[c2 - 1]) or (c1, v1) > (c2, v2):
        return None
    ids = []
    for chapter in range(c1, c2 + 1):
        first = v1 if chapter == c1 else 1
        last = v2 if chapter == c2 else chapters[chapter - 1]
        ids.extend(f"{book.id}_{chapter}_{v}" for v in range(first, last + 1))
    return ids
