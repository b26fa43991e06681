"""Commentary's first pass: one stored entry cut into structural units by its own markup.

Matthew Henry's "Verses 14-19" comments with the chapter outline and introductions beside them;
Spurgeon's per-psalm entries by their sections (Overview, Exposition, Explanatory Notes, Hints to
the Village Preacher …) and, inside a section, by "Verse 3." paragraphs; a Scofield note is one
unit; any other module's entry is one unit under its first title. Each unit knows the verses it
comments on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lectio.bible.books import book_by_osis
from lectio.readers.sword_commentary import Paragraph, RawEntry, Title

@dataclass(frozen=True)
class Unit:
    """One structural unit of commentary: a section of an entry about some verses."""

    entry_id: str
    book: str  # lectio book id, "rom"
    chapter: int  # 0 for a book-level unit
    scope: str  # "verses" | "chapter" | "book"
    verses: tuple[int, ...]  # the chapter's verses it comments on (scope "verses")
    section: str | None  # the heading it sits under, for the header and the merge rule
    paragraphs: tuple[str, ...]
    # The osisRef attributes each paragraph cites, so a split piece keeps only its own.
    paragraph_refs: tuple[tuple[str, ...], ...] = ()
    headwords: tuple[str, ...] = ()  # Scofield: the words of the verse the note explains
    # Units with the same key are at one heading level and may be merged when small; None: never.
    merge_key: tuple | None = None
    # The heading the header replaces ("Verses 2-11"); written back when merged units share one.
    heading: str | None = None



_TAGS = re.compile(r"<[^>]*>")
_WHITESPACE = re.compile(r"\s+")


def plain(markup: str) -> str:
    return _WHITESPACE.sub(" ", _TAGS.sub(" ", markup)).strip()


def _scope_of(entry: RawEntry) -> tuple[str, int, tuple[int, ...]]:
    """Scope, chapter and verses of an entry as the module files it."""
    if entry.chapter == 0:
        return "book", 0, ()
    if entry.first_verse == 0:
        return "chapter", entry.chapter, ()
    return "verses", entry.chapter, tuple(range(entry.first_verse, entry.last_verse + 1))


def _unit(entry: RawEntry, entry_id: str, scope: str, chapter: int, verses, section, paragraphs, **extra) -> Unit:
    return Unit(
        entry_id=entry_id,
        book=book_by_osis(entry.book_osis).id,
        chapter=chapter,
        scope=scope,
        verses=tuple(verses),
        section=section,
        paragraphs=tuple(p.text for p in paragraphs),
        paragraph_refs=tuple(p.refs for p in paragraphs),
        **extra,
    )


# --- Matthew Henry's Concise Commentary ------------------------------------------------

_MHCC_VERSES = re.compile(r"Verses? (\d+)(?:\s*-\s*(\d+))?")
_MHCC_OUTLINE_ROW = re.compile(r"(.*?)\s*\((\d+)(?:\s*-\s*(\d+))?\)\s*$", re.DOTALL)
_MHCC_CHAPTER = re.compile(r"Chapter (\d+)")
# "ver. #(18)": a verse number the module wrapped in a link marker that lost its link.
_MHCC_VERSE_MARK = re.compile(r"#\(\s*([^)]*?)\s*\)")
# A chapter comment opens with its summary: "Esau and his descendants. --The registers …"
_AWAITING_SUMMARY = "\x00summary"  # a chapter comment whose summary line is still to come
_MHCC_SUMMARY = re.compile(r"^(.{1,160}?)\s*--\s*(.*)$", re.DOTALL)


def _segment_mhcc(entry: RawEntry, entry_id: str, blocks, facts, context) -> list[Unit]:
    scope, chapter, verses = _scope_of(entry)
    outlines: dict = context.setdefault("outline", {})
    units: list[Unit] = []
    # The open unit: [scope, chapter, verses, section, paragraphs]
    current = None

    def close():
        if current and current[4]:
            section = None if current[3] == _AWAITING_SUMMARY else current[3]
            # Matthew Henry's "Verses a-b" comments of one chapter are one heading level, though
            # each is its own entry: Proverbs is commented verse by verse, a line each.
            key = ("comment", entry.book_osis, current[1]) if current[0] == "verses" else None
            heading = _verses_heading(current[2]) if key else None
            units.append(_unit(entry, entry_id, *current[:3], section, current[4], merge_key=key, heading=heading))

    for block in blocks:
        if isinstance(block, Title):
            if block.kind in ("x-ms", "main"):  # the book's name: its introduction follows
                close()
                current = ["book", 0, (), "Introduction", []]
            elif block.kind == "x-s2" and (m := _MHCC_CHAPTER.fullmatch(block.text)):
                close()
                chapter = int(m[1])
                current = ["chapter", chapter, (), _AWAITING_SUMMARY, []]
            elif block.kind == "x-IS":
                close()
                current = ["chapter", chapter or entry.chapter, (), "Chapter Outline", []]
            else:
                close()
                current = [scope, chapter, verses, block.text, []]
            continue
        heading = _MHCC_VERSES.fullmatch(block.text)
        if heading and block.lead:
            close()
            first, last = int(heading[1]), int(heading[2] or heading[1])
            chapter = chapter or entry.chapter
            section = _outline_title(outlines.get((entry.book_osis, chapter), {}), first, last)
            current = ["verses", chapter, tuple(range(first, last + 1)), section, []]
            continue
        if current is None:
            current = [scope, chapter, verses, None, []]
        if current[3] == "Chapter Outline" and (row := _MHCC_OUTLINE_ROW.fullmatch(block.text)):
            first, last = int(row[2]), int(row[3] or row[2])
            outlines.setdefault((entry.book_osis, current[1]), {})[(first, last)] = row[1]
        if current[3] == _AWAITING_SUMMARY:
            # A chapter comment opens with its summary ("Esau and his descendants. --The
            # registers …", or "laws." alone): the summary is the unit's section title.
            summary = _MHCC_SUMMARY.match(block.text)
            if summary:
                current[3] = summary[1]
                block = Paragraph(summary[2].strip(), refs=block.refs)
            elif len(block.text) < 160 and block.text.endswith("."):
                current[3] = block.text
                continue
            else:
                current[3] = None
        elif current[0] == "chapter" and not current[4] and block.text.startswith("--"):
            block = Paragraph(block.text[2:].strip(), block.lead, block.refs)
        if block.text:
            current[4].append(Paragraph(_MHCC_VERSE_MARK.sub(r"\1", block.text), block.lead, block.refs))
    close()
    return units


def _verses_heading(verses: tuple[int, ...]) -> str:
    return f"Verse {verses[0]}" if len(verses) == 1 else f"Verses {verses[0]}-{verses[-1]}"


def _outline_title(rows: dict[tuple[int, int], str], first: int, last: int) -> str | None:
    """The chapter outline's line for a comment on verses first-last: the exact range, else the
    line overlapping it most."""
    if (first, last) in rows:
        return rows[(first, last)]
    overlap = {
        key: min(last, key[1]) - max(first, key[0]) + 1 for key in rows if min(last, key[1]) >= max(first, key[0])
    }
    return rows[max(overlap, key=overlap.get)] if overlap else None


# --- Spurgeon's Treasury of David ------------------------------------------------------

# Sections whose paragraphs open with the verse they treat; any other title is psalm-wide.
_TDAVID_VERSE_SECTIONS = (
    "EXPOSITION",
    "EXPLANATORY NOTES AND QUAINT SAYINGS",
    "HINTS TO THE VILLAGE PREACHER",
    "HINTS TO PREACHERS",
)
_TDAVID_VERSE_LEAD = re.compile(
    r"^(?:Verses?|Vers?\.)\s*(\d+(?:\s*(?:[-–,]|and|to)\s*\d+)*)\s*\.?", re.IGNORECASE
)
_TDAVID_WHOLE = re.compile(r"^(?:Whole Psalm|The Whole Psalm)\b", re.IGNORECASE)
# "Psalms 119:2*": a navigation line left from the web edition between verse groups.
_TDAVID_MARKER = re.compile(r"Psalms? \d+:\d+\*")
_TDAVID_WORKS = re.compile(r"(WORKS? UPON THE (?:[A-Z-]+ )+?PSALMS?)\.?(.*)", re.DOTALL)
_TDAVID_OVERVIEW = re.compile(r"Psalms? \d+(?: OVERVIEW)?", re.IGNORECASE)


def _segment_tdavid(entry: RawEntry, entry_id: str, blocks, facts, context) -> list[Unit]:
    scope, chapter, _ = _scope_of(entry)
    psalm_scope = "book" if scope == "book" else "chapter"
    units: list[Unit] = []
    section: str | None = "Preface" if scope == "book" else "Overview"
    verse_section = False  # inside Exposition, Explanatory Notes or Hints
    subheading: str | None = None  # "Title." or "New Translation" inside a verse section
    current: list | None = None  # [scope, verses, paragraphs]

    def close():
        if current and current[2]:
            label = f"{section}: {subheading}" if subheading else section
            key = (entry_id, label, current[0])
            units.append(_unit(entry, entry_id, current[0], chapter, current[1], label, current[2], merge_key=key))

    for block in blocks:
        if isinstance(block, Paragraph) and _TDAVID_WORKS.match(block.text):
            block = Title("x-s", block.text)  # a bibliography heading that lost its <title>
        if isinstance(block, Title):
            close()
            current = None
            name, rest = _tdavid_section(block.text)
            if name.upper() in _TDAVID_VERSE_SECTIONS:
                section, verse_section, subheading = name, True, None
            elif verse_section and not _TDAVID_WORKS.match(block.text):
                # Notes on the psalm's title, a new translation …: a heading inside the
                # section; the "Verse N." paragraphs after it still belong to the section.
                subheading = name
            else:
                section, verse_section, subheading = name, False, None
            if not rest:
                continue
            block = Paragraph(rest)
        if _TDAVID_MARKER.fullmatch(block.text):
            continue
        lead = _TDAVID_VERSE_LEAD.match(block.lead or block.text) if verse_section else None
        if lead and scope != "book":
            close()
            subheading = None
            current = ["verses", _verse_numbers(lead[1]), []]
        elif verse_section and _TDAVID_WHOLE.match(block.text):
            close()
            current = [psalm_scope, (), []]
        elif current is None:
            current = [psalm_scope, (), []]
        current[2].append(block)
    close()
    return units


def _tdavid_section(title: str) -> tuple[str, str]:
    """(section name, text that the title swallowed) of a Treasury of David title."""
    if works := _TDAVID_WORKS.match(title):
        return _title_case(works[1]), works[2].strip()
    upper = title.upper()
    for name in _TDAVID_VERSE_SECTIONS:
        if upper.startswith(name):
            rest = title[len(name):].lstrip(" .")
            return _title_case(name), rest
    if _TDAVID_OVERVIEW.fullmatch(title):
        return "Overview", ""
    return _title_case(title.rstrip(" .")), ""


def _title_case(text: str) -> str:
    small = {"a", "an", "and", "as", "in", "of", "on", "the", "to", "upon"}
    words = text.lower().split()
    return " ".join(w if i and w in small else w[:1].upper() + w[1:] for i, w in enumerate(words))


def _verse_numbers(spec: str) -> tuple[int, ...]:
    """"1, 2" → (1, 2); "3-5" → (3, 4, 5); "7 and 8" → (7, 8)."""
    numbers: set[int] = set()
    for part in re.split(r"\s*(?:,|and)\s*", spec):
        bounds = [int(n) for n in re.findall(r"\d+", part)]
        if len(bounds) == 2 and bounds[0] <= bounds[1]:
            numbers.update(range(bounds[0], bounds[1] + 1))
        else:
            numbers.update(bounds)
    return tuple(sorted(numbers))


# --- Scofield Reference Notes ----------------------------------------------------------

MAX_HEADWORDS_IN_HEADER = 3
# "Read first chapter of Genesis": a link of the web edition the notes came from, not a note.
_SCOFIELD_NAVIGATION = re.compile(r"Read first chapter of [\w ]+")


def _segment_scofield(entry: RawEntry, entry_id: str, blocks, facts, context) -> list[Unit]:
    scope, chapter, verses = _scope_of(entry)
    section = None
    headwords: list[str] = []
    paragraphs: list[Paragraph] = []
    for block in blocks:
        if isinstance(block, Title):
            section = section or block.text
            if block.text.startswith("Book Introduction") and scope == "chapter":
                scope, chapter = "book", 0  # filed in chapter 1's heading slot, about the book
            continue
        if _SCOFIELD_NAVIGATION.fullmatch(block.text):
            continue
        if block.lead:
            headwords.append(block.lead)
        if paragraphs and paragraphs[-1].text == paragraphs[-1].lead:
            # A headword printed on its own line belongs with the gloss that follows it.
            head = paragraphs.pop()
            block = Paragraph(f"{head.text}\n{block.text}", head.lead, head.refs + block.refs)
        paragraphs.append(block)
    if not paragraphs:
        return []
    if section is None and headwords:
        section = "; ".join(dict.fromkeys(headwords[:MAX_HEADWORDS_IN_HEADER]))
    return [_unit(entry, entry_id, scope, chapter, verses, section, paragraphs, headwords=tuple(headwords))]


# --- any other commentary --------------------------------------------------------------


def _segment_generic(entry: RawEntry, entry_id: str, blocks, facts, context) -> list[Unit]:
    scope, chapter, verses = _scope_of(entry)
    titles = [b.text for b in blocks if isinstance(b, Title)]
    paragraphs = [b for b in blocks if isinstance(b, Paragraph)]
    if not paragraphs:
        return []
    return [_unit(entry, entry_id, scope, chapter, verses, titles[0] if titles else None, paragraphs)]


_SEGMENTERS = {"mhcc": _segment_mhcc, "tdavid": _segment_tdavid, "scofield": _segment_scofield}


def segmenter(module_name: str):
    """The segmenter for a module, by its name."""
    return _SEGMENTERS.get(module_name.lower(), _segment_generic)
