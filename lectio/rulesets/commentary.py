"""Commentary from SWORD modules: entries → structural units → chunks that fit the model.

Three passes, plus an overlap:

1. Structural segmentation. An entry (one stored comment) is cut into units by its own markup:
   Matthew Henry's "Verses 14-19" comments with the chapter outline and introductions beside
   them; Spurgeon's per-psalm entries by their sections (Overview, Exposition, Explanatory
   Notes, Hints to the Village Preacher …) and, inside a section, by "Verse 3." paragraphs;
   a Scofield note is one unit. Each unit knows the verses it comments on.
2. Size normalisation. A unit under MIN_UNIT_TOKENS joins its neighbour of the same section
   (heading level) when the two fit together; a unit over the budget is split at paragraphs,
   then sentences (lectio.rulesets.textsplit).
3. Context injection. Every chunk's text opens with
   `[Commentary on Romans 8:28-31 | Matthew Henry, "Concise Commentary" | Section: …]`.
4. Trailing-sentence overlap between consecutive pieces of one split unit.

The budget is the model's: header + blank line + body must fit MAX_TEXT_TOKENS word pieces.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from lectio.bible.books import book_by_id, book_by_osis
from lectio.rulesets.chunk import Chunk, ruleset_version, source_chunk_id
from lectio.readers.corpus import CorpusError, ensure_sword_module
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.readers.raw import RawText, hash_parts
from lectio.readers.sword_commentary import (
    CommentaryModule,
    RawEntry,
    osis_ref_ids,
    parse_blocks,
    read_sword_commentary,
)
from lectio.bible.refs import END_OF_CHAPTER, Ref, RefRange
from lectio.rulesets.commentary_units import Unit, plain, segmenter
from lectio.rulesets.scripture import chapter_filter
from lectio.rulesets.base import Ruleset
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import paragraphs, sentences, split_to_fit, with_trailing_overlap

# A common commentary rule merges under 150 and splits over 600 tokens; our ceiling is the
# model's 254, so the same quarter-of-the-ceiling floor is 64. Below it a unit is a line or two
# ("Verse 9 Lying is a damning, destroying sin.") whose vector says little on its own.
MIN_UNIT_TOKENS = 64
# A split piece leaves this much room under the budget so the previous piece's last sentence
# can be carried in front of it (a median sentence here is ~30 word pieces).
OVERLAP_RESERVE_TOKENS = 48
MAX_SECTION_CHARS = 80  # a header's section label is cut here; the header is in every chunk
_WHITESPACE = re.compile(r"\s+")

RULES = {
    "max_text_tokens": MAX_TEXT_TOKENS,
    "header": '[Commentary on {passage} | {author}, "{title}" | Section: {section}] + blank line',
    "entries": "runs of identical consecutive verse slots of one chapter; heading slots included",
    "units": {
        "mhcc": "book introduction, chapter comment, chapter outline, each 'Verse(s) a-b' comment",
        "tdavid": "psalm sections by title; verse sections by 'Verse N.'/'Ver. N.' paragraphs",
        "scofield": "one note per entry; a verse-1 note repeating the previous chapter's last is a leak",
        "other": "one unit per entry",
    },
    "refs": "verse unit: its verses; chapter unit: every verse of the chapter; book unit: its first verse",
    "min_unit_tokens": MIN_UNIT_TOKENS,
    "merge": "neighbours at one heading level (MHCC: a chapter's comments; TDavid: an entry's section;"
    " Scofield: none), while one is under the floor and both fit",
    "split": "paragraphs, then sentences, then words (textsplit.split_to_fit), balanced piece sizes",
    "overlap": "trailing sentence, between pieces of one split unit",
    "overlap_reserve_tokens": OVERLAP_RESERVE_TOKENS,
    "cross_refs": "osisRef attributes, expanded to verse ids with the module's versification",
    "text": "MHCC 'ver. #(18)' → 'ver. 18'; a Scofield headword line joins its gloss; a list joins "
    "the sentence that introduces it; merged MHCC comments keep their 'Verse N.' heading",
    "dropped": "web-edition navigation: Scofield 'Read first chapter of …', TDavid 'Psalms 119:2*'",
    "chunk_ids": "<source id>/<book>_<chapter>_<first verse>[_<last verse>]_<piece>",
    "revision": 2,
}
RULESET = ruleset_version("commentary", RULES)


# ---------------------------------------------------------------- raw texts


@dataclass(frozen=True)
class RawCommentary:
    module: CommentaryModule
    entries: list[RawEntry]
    slots: int  # verse and heading slots that held text, before runs were merged


def read(source: Source, corpus_dir: Path) -> RawText:
    module = source.module
    if not module:
        raise SourceError(source.id, "format 'sword-commentary' needs a 'module' name")
    if source.path is not None:
        library = source.path
        if not (library / "mods.d").is_dir():
            raise SourceError(source.id, f"{library} is not a SWORD library (no mods.d folder)")
    else:
        try:
            library = ensure_sword_module(corpus_dir, module)
        except CorpusError as exc:
            raise SourceError(source.id, str(exc)) from None
    select = chapter_filter(source)
    try:
        facts, entries, slots = read_sword_commentary(library, module, select)
    except (ValueError, OSError) as exc:
        raise SourceError(source.id, f"cannot read SWORD module {module!r}: {exc}") from None
    if not entries:
        where = " in 'select'" if select else ""
        raise SourceError(source.id, f"SWORD module {module!r} has no entries{where}")
    return RawText(
        source.id,
        hash_parts(f"{e.book_osis}.{e.chapter}.{e.first_verse}-{e.last_verse}\t{e.markup}" for e in entries),
        RawCommentary(facts, entries, slots),
        units=len(entries),
    )


# ---------------------------------------------------------------- parsed structure


@dataclass(frozen=True)
class Commentary:
    module: str
    description: str
    chapter_lengths: dict[str, tuple[int, ...]]
    units: list[Unit]
    entries: int
    # (entry id, why) for entries read but not indexed, so a count in meets a count out.
    skipped: list[tuple[str, str]] = field(default_factory=list)


def parse(source: Source, raw: RawText) -> Commentary:
    payload: RawCommentary = raw.payload
    facts = payload.module
    segment = segmenter(facts.name)
    units: list[Unit] = []
    skipped: list[tuple[str, str]] = []
    context: dict = {}  # what one entry leaves for the next (MHCC's chapter outline)
    previous: RawEntry | None = None
    for entry in payload.entries:
        entry_id = _entry_id(source, entry)
        reason = _skip_reason(facts, entry, previous)
        previous = entry
        if reason:
            skipped.append((entry_id, reason))
            continue
        found = segment(entry, entry_id, parse_blocks(entry.markup), facts, context)
        if not found:
            skipped.append((entry_id, "markup holds no text"))
        units.extend(found)
    if not units:
        raise SourceError(source.id, f"SWORD module {facts.name!r}: no commentary text in {raw.units} entries")
    return Commentary(facts.name, facts.description, facts.chapter_lengths, units, raw.units, skipped)


def _entry_id(source: Source, entry: RawEntry) -> str:
    book = book_by_osis(entry.book_osis).id
    span = f"{entry.first_verse}"
    if entry.last_verse != entry.first_verse:
        span += f"_{entry.last_verse}"
    return source_chunk_id(source, f"{book}_{entry.chapter}_{span}")


def _skip_reason(facts: CommentaryModule, entry: RawEntry, previous: RawEntry | None) -> str | None:
    # Scofield's module repeats a chapter's last note in verse 1 of the next chapter that has
    # notes (Rom 8:39 "creature Or, created thing." again at Rom 9:1): a leak, not a note.
    if (
        facts.name.lower() == "scofield"
        and previous is not None
        and entry.first_verse == 1
        and previous.chapter not in (0, entry.chapter)
        and previous.book_osis == entry.book_osis
        and plain(previous.markup) == plain(entry.markup)
    ):
        return f"repeats the note at {previous.book_osis} {previous.chapter}:{previous.first_verse}"
    return None


# ---------------------------------------------------------------- references


def unit_refs(unit: Unit, lengths: dict[str, tuple[int, ...]]) -> tuple[str, ...]:
    """Verse ids a unit comments on, bounded by the module's versification."""
    book = book_by_id(unit.book)
    chapters = lengths.get(book.osis, ())
    if unit.scope == "book":
        return (f"{book.id}_1_1",)
    if not 1 <= unit.chapter <= len(chapters):
        return ()
    count = chapters[unit.chapter - 1]
    if unit.scope == "chapter":
        return tuple(f"{book.id}_{unit.chapter}_{v}" for v in range(1, count + 1))
    return tuple(f"{book.id}_{unit.chapter}_{v}" for v in unit.verses if 1 <= v <= count)


def passage_label(unit: Unit, refs: tuple[str, ...]) -> str:
    """"Romans 8:28-31", "Psalms 119:2-3, 5", "Psalms 23", "Romans (introduction)"."""
    book = book_by_id(unit.book)
    if unit.scope == "book" or not refs:
        return f"{book.name} (introduction)"
    if unit.scope == "chapter":
        return RefRange(Ref(book.id, unit.chapter, 1), Ref(book.id, unit.chapter, END_OF_CHAPTER)).label
    verses = sorted(Ref.from_id(r).verse for r in refs)
    runs: list[list[int]] = []
    for verse in verses:
        if runs and verse == runs[-1][1] + 1:
            runs[-1][1] = verse
        else:
            runs.append([verse, verse])
    spans = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)
    return f"{book.name} {spans}" if book.chapters == 1 else f"{book.name} {unit.chapter}:{spans}"


# ---------------------------------------------------------------- chunks


def header(source: Source, passage: str, section: str | None) -> str:
    author = source.metadata.get("author")
    work = f'{author}, "{source.title}"' if author else f'"{source.title}"'
    parts = [f"Commentary on {passage}", work]
    if section:
        label = section if len(section) <= MAX_SECTION_CHARS else section[: MAX_SECTION_CHARS - 1].rstrip() + "…"
        parts.append(f"Section: {label}")
    return "[" + " | ".join(parts) + "]"


@dataclass
class _Group:
    """Units being merged: one entry, one section, one scope."""

    units: list[Unit]
    refs: tuple[str, ...]
    tokens: int

    @property
    def first(self) -> Unit:
        return self.units[0]


def chunk(source: Source, parsed: Commentary) -> list[Chunk]:
    chunks: list[Chunk] = []
    part_of_entry: dict[str, int] = {}
    for group in _merge_small(source, parsed.units, parsed.chapter_lengths):
        unit = group.first
        passage = passage_label(unit, group.refs)
        section = _section_of(group.units)
        head = header(source, passage, section)
        paragraphs = _paragraphs_of(group.units)
        body = "\n\n".join(paragraphs)
        budget = MAX_TEXT_TOKENS - count_tokens([head])[0]
        if budget < MIN_UNIT_TOKENS:
            raise SourceError(source.id, f"the header {head!r} leaves only {budget} word pieces for text")
        pieces = _split(body, budget)
        cited = _refs_per_piece(body, paragraphs, [r for u in group.units for r in u.paragraph_refs], pieces)
        bodies = with_trailing_overlap(pieces, budget)
        texts = [f"{head}\n\n{b}" for b in bodies]
        for i, (text, tokens) in enumerate(zip(texts, count_tokens(texts))):
            part = part_of_entry[unit.entry_id] = part_of_entry.get(unit.entry_id, 0) + 1
            chunk = _make_chunk(source, group, _Piece(text, tokens, part, cited[i]), passage, section,
                                parsed.chapter_lengths)
            chunk.metadata.update(piece=i + 1, pieces=len(pieces), overlap=bodies[i] != pieces[i])
            chunks.append(chunk)
    return chunks


@dataclass(frozen=True)
class _Piece:
    """One chunk's share of a group: its text (header included), its word pieces, its
    number within the entry, and the osisRefs of the paragraphs it draws from."""

    text: str
    tokens: int
    part: int
    osis_refs: tuple


def _make_chunk(source, group, piece: _Piece, passage, section, lengths) -> Chunk:
    unit = group.first
    book = book_by_id(unit.book)
    first = Ref.from_id(group.refs[0]) if group.refs else None
    cross: list[str] = []
    see_notes: list[str] = []
    unparsed = 0
    for osis_ref in piece.osis_refs:
        ids, failed = osis_ref_ids(osis_ref, lengths)
        unparsed += failed
        cross.extend(ids)
        if osis_ref.lower().startswith("scofield:"):
            see_notes.extend(ids)  # "See Scofield note at …": a link to another note
    metadata = {
        "entry_id": unit.entry_id,
        "entry_ids": list(dict.fromkeys(u.entry_id for u in group.units)),
        "module": source.module,
        "author": source.metadata.get("author"),
        "tradition": source.metadata.get("tradition"),
        "tier": source.metadata.get("tier"),
        "scope": unit.scope,
        "section": section,
        "passage": passage,
        "units": len(group.units),
        "cross_refs": list(dict.fromkeys(cross)),
    }
    if see_notes:
        metadata["see_notes"] = list(dict.fromkeys(see_notes))
    if unparsed:
        metadata["cross_refs_unparsed"] = unparsed
    headwords = [w for u in group.units for w in u.headwords]
    if headwords:
        metadata["headwords"] = headwords
    crumb = [source.title, book.name if unit.scope == "book" else f"{book.name} {unit.chapter}"]
    if section:
        crumb.append(section)
    return Chunk.for_source(
        source,
        RULESET,
        chunk_id=f"{unit.entry_id}_{piece.part:04d}",
        granularity="commentary",
        text=piece.text,
        tokens=piece.tokens,
        breadcrumb=" › ".join(crumb),
        refs=group.refs,
        ordinal=first.ordinal if first else None,
        book=book.id,
        chapter=unit.chapter or None,
        verse=first.verse if first and unit.scope == "verses" else None,
        testament=book.testament,
        genre=book.genre,
        title=source.title,
        metadata=metadata,
    )


def _merge_small(source: Source, units: list[Unit], lengths) -> list[_Group]:
    """Pass 2a: units under MIN_UNIT_TOKENS join neighbours at the same heading level (same
    merge key) while the two fit the budget under their joint header.

    A group takes the next unit only while it is itself under the floor, so tiny units gather
    into groups just over it (three one-line proverbs) instead of filling the model's window;
    a tiny group left at the end of a run joins the group before it.
    """
    sizes = count_tokens(["\n\n".join(u.paragraphs) for u in units])
    groups: list[_Group] = []
    for unit, size in zip(units, sizes):
        last = groups[-1] if groups else None
        incoming = _Group([unit], unit_refs(unit, lengths), size)
        if last is not None and last.tokens < MIN_UNIT_TOKENS and _join(source, last, incoming):
            continue
        groups.append(incoming)
    merged: list[_Group] = []
    for group in groups:
        if merged and group.tokens < MIN_UNIT_TOKENS and _join(source, merged[-1], group):
            continue
        merged.append(group)
    return merged


def _join(source: Source, group: _Group, other: _Group) -> bool:
    """Append `other` to `group` when both sit at one heading level and fit together."""
    key = group.first.merge_key
    if key is None or other.first.merge_key != key:
        return False
    refs = tuple(sorted(set(group.refs) | set(other.refs), key=lambda r: Ref.from_id(r).ordinal))
    head = header(source, passage_label(group.first, refs), _section_of(group.units + other.units))
    if count_tokens([head])[0] + group.tokens + other.tokens > MAX_TEXT_TOKENS:
        return False
    group.units.extend(other.units)
    group.refs = refs
    group.tokens += other.tokens
    return True


def _paragraphs_of(units: list[Unit]) -> list[str]:
    """The paragraphs of a group; when several comments share one header, each opens with the
    heading that tells which verses it is about."""
    out = []
    for unit in units:
        for i, paragraph in enumerate(unit.paragraphs):
            label = unit.heading if len(units) > 1 and i == 0 and unit.heading else None
            out.append(f"{label}. {paragraph}" if label else paragraph)
    return out


def _section_of(units: list[Unit]) -> str | None:
    """The header's section for merged units: their distinct sections, in order."""
    sections = [s for s in dict.fromkeys(u.section for u in units) if s]
    return " / ".join(sections) or None


def _split(body: str, budget: int) -> list[str]:
    """Pass 2b: pieces of `body` that fit `budget`, before the overlap is added.

    Paragraphs that fit stay whole; a longer one is cut at sentences (textsplit.split_to_fit).
    Pieces leave OVERLAP_RESERVE_TOKENS free for the carried sentence, and are balanced:
    greedy packing turns 300 tokens into 206 + 94, so when the last piece is short a lower
    target that keeps the piece count is tried. The target never drops below a paragraph that
    fits whole or below the longest sentence, so balancing cuts nothing the greedy pass kept.
    """
    size = count_tokens([body])[0]
    if size <= budget:
        return [body]
    limit = budget - OVERLAP_RESERVE_TOKENS
    pieces = split_to_fit(body, limit)
    if len(pieces) > 1 and count_tokens(pieces[-1:])[0] < limit // 2:
        blocks = paragraphs(body)
        block_sizes = count_tokens(blocks)
        long_blocks = [b for b, n in zip(blocks, block_sizes) if n > limit]
        floor = max([n for n in block_sizes if n <= limit] + [0])
        if long_blocks:
            floor = max([floor] + count_tokens([s for b in long_blocks for s in sentences(b)]))
        even = math.ceil(size / len(pieces))
        for target in (max(floor, math.ceil(even * f)) for f in (1.05, 1.15, 1.3)):
            if target >= limit:
                break
            balanced = split_to_fit(body, target)
            if len(balanced) <= len(pieces):
                pieces = balanced
                break
    return pieces


def _refs_per_piece(body: str, paragraphs: list[str], paragraph_refs: list, pieces: list[str]) -> list[tuple]:
    """The osisRefs of the paragraphs each piece draws text from.

    Pieces are consecutive stretches of `body` (split_to_fit only re-joins what it cut), so
    each piece's start is found in order; a paragraph cut in two lends its refs to both.
    """
    if len(pieces) == 1:
        return [tuple(r for refs in paragraph_refs for r in refs)]
    spans, offset = [], 0
    for paragraph in paragraphs:
        start = body.index(paragraph, offset)
        spans.append((start, start + len(paragraph)))
        offset = start + len(paragraph)
    starts = _piece_starts(body, pieces)
    ends = starts[1:] + [len(body)]
    return [
        tuple(r for (a, b), refs in zip(spans, paragraph_refs) if a < end and start < b for r in refs)
        for start, end in zip(starts, ends)
    ]


def _piece_starts(body: str, pieces: list[str]) -> list[int]:
    """Where each piece opens in `body`, searched in order.

    Joining sentences may change the whitespace between them ('peace." " Thou' where the
    paragraph had 'peace." "Thou'), so a piece's first 30 other characters are looked up in
    the body with its whitespace removed, and the position mapped back.
    """
    kept = [i for i, char in enumerate(body) if not char.isspace()]  # body position of each
    squeezed = "".join(body[i] for i in kept)
    starts, cursor = [], 0
    for piece in pieces:
        probe = _WHITESPACE.sub("", piece)[:30]
        found = squeezed.find(probe, bisect_left(kept, cursor)) if probe else -1
        cursor = kept[found] if found >= 0 else cursor
        starts.append(cursor)
    return starts


class Commentaries(Ruleset[Commentary], read=read, parse=parse, chunk=chunk):
    name = "commentary"
    versions = {"default": RULESET}
    granularities = frozenset({"commentary"})

    def units(self, commentary: Commentary) -> int:
        return len(commentary.units)


COMMENTARY = Commentaries()
