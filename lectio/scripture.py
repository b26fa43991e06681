"""Scripture from a SWORD Bible module: raw verses → verse structure → verse and pericope chunks.

Seed 000: the verse is the natural retrieval unit, and a pericope (a multi-verse argument or
narrative) is indexed beside it so a query about a whole passage can match the passage.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from lectio.books import book_by_id, book_by_osis, find_book
from lectio.chunk import Chunk, ruleset_version
from lectio.corpus import CorpusError, ensure_sword_module
from lectio.model import count_tokens
from lectio.pericopes import ATTRIBUTION, assign_pericopes, load_pericopes
from lectio.raw import RawText, hash_parts
from lectio.readers.sword_bible import MAX_VERSE_CHARS, RawVerse, parse_verse, read_sword_bible
from lectio.refs import UnknownReference, parse_reference
from lectio.sources import Source, SourceError

RULES = {
    "granularities": ["verse", "pericope"],
    "pericopes": "biblelib BSB",
    "pericope_text": "title line, then the verses joined by spaces",
    "uncovered_verses": "join the preceding pericope of the book",
    "revision": 1,
}
RULESET = ruleset_version("scripture", RULES)


# ---------------------------------------------------------------- raw texts


def read(source: Source, corpus_dir: Path) -> RawText:
    if source.path is not None:
        library, module = source.path, source.module
        if not (library / "mods.d").is_dir():
            raise SourceError(source.id, f"{library} is not a SWORD library (no mods.d folder)")
    else:
        module = source.module
        try:
            library = ensure_sword_module(corpus_dir, module)
        except CorpusError as exc:
            raise SourceError(source.id, str(exc)) from None
    if not module:
        raise SourceError(source.id, "format 'sword-bible' needs a 'module' name")
    select = _chapter_filter(source)
    try:
        verses = list(read_sword_bible(library, module, select))
    except (ValueError, OSError) as exc:
        raise SourceError(source.id, f"cannot read SWORD module {module!r}: {exc}") from None
    if not verses:
        raise SourceError(source.id, f"SWORD module {module!r} has no verses" + (" in 'select'" if select else ""))
    return RawText(
        source.id,
        hash_parts(f"{v.book_osis}.{v.chapter}.{v.verse}\t{v.markup}" for v in verses),
        verses,
        units=len(verses),
    )


def _chapter_filter(source: Source):
    """`select: "Philippians; Romans 5-8"` reads only those books or chapters (tests, demos)."""
    if not source.select:
        return None
    spans = []  # (first ordinal, last ordinal)
    for part in str(source.select).split(";"):
        book = find_book(part.strip())
        if book is not None:
            spans.append((book.number * 1_000_000, book.number * 1_000_000 + 999_999))
            continue
        try:
            ranges = parse_reference(part)
        except UnknownReference as exc:
            raise SourceError(source.id, f"'select' names no real passage: {exc}") from None
        if not ranges:
            raise SourceError(source.id, f"'select' part {part.strip()!r} is not a book or reference")
        spans.extend((r.start_ordinal, r.end_ordinal) for r in ranges)

    def wanted(book_osis: str, chapter: int) -> bool:
        number = book_by_osis(book_osis).number
        first, last = number * 1_000_000 + chapter * 1_000, number * 1_000_000 + chapter * 1_000 + 999
        return any(start <= last and first <= end for start, end in spans)

    return wanted


# ---------------------------------------------------------------- parsed structure


def parse(source: Source, raw: RawText) -> pd.DataFrame:
    """One row per verse slot: book, chapter, verse, clean text, paragraph start, Strong's."""
    rows = []
    for v in raw.payload:
        book = book_by_osis(v.book_osis)
        parsed = parse_verse(v.markup, chapter_start=v.verse == 1)
        if len(parsed.text) > MAX_VERSE_CHARS:
            # No verse is that long: non-verse matter (a glossary, an appendix) leaked in.
            raise SourceError(
                source.id,
                f"{book.name} {v.chapter}:{v.verse} is {len(parsed.text)} characters long "
                f"(limit {MAX_VERSE_CHARS}); the module's markup was not understood",
            )
        rows.append(
            {
                "ref": f"{book.id}_{v.chapter}_{v.verse}",
                "book": book.id,
                "book_number": book.number,
                "chapter": v.chapter,
                "verse": v.verse,
                "ordinal": book.number * 1_000_000 + v.chapter * 1_000 + v.verse,
                "text": parsed.text,
                "paragraph_start": parsed.paragraph_start,
                "strongs": list(parsed.strongs),
                "titles": list(parsed.titles),
                "dropped_chars": parsed.dropped_chars,
            }
        )
    return pd.DataFrame(rows)


def empty_verses(structure: pd.DataFrame) -> list[str]:
    return structure.loc[structure["text"] == "", "ref"].tolist()


# ---------------------------------------------------------------- chunks


def chunk(source: Source, structure: pd.DataFrame) -> list[Chunk]:
    verses = structure[structure["text"] != ""].reset_index(drop=True)
    suffix = (source.translation or source.id).lower()
    pericopes = load_pericopes()
    assignment = assign_pericopes(
        list(zip(verses["book_number"], verses["chapter"], verses["verse"])), pericopes
    )
    verses["pericope"] = assignment.indices

    peri_chunks = []
    parent_of: dict[int, str] = {}
    for index, group in verses.groupby("pericope", sort=False):
        first, last = group.iloc[0], group.iloc[-1]
        end = f"{last.verse}" if last.chapter == first.chapter else f"{last.chapter}_{last.verse}"
        chunk_id = f"{first.ref}_{end}_{suffix}"
        parent_of[index] = chunk_id
        title = pericopes[int(index)].title
        peri_chunks.append(
            dict(
                chunk_id=chunk_id,
                granularity="pericope",
                text=f"{title}\n" + " ".join(group["text"]),
                header=f"{_label(first)}-{end.replace('_', ':')} ({source.translation or source.id})",
                refs=tuple(group["ref"]),
                ordinal=int(first.ordinal),
                book=first.book,
                chapter=int(first.chapter),
                verse=int(first.verse),
                title=title,
                metadata={"start_ref": first.ref, "end_ref": last.ref, "theme": title, "attribution": ATTRIBUTION},
            )
        )

    verse_chunks = [
        dict(
            chunk_id=f"{v.ref}_{suffix}",
            granularity="verse",
            text=v.text,
            header=f"{_label(v)} ({source.translation or source.id})",
            parent_id=parent_of.get(v.pericope),
            refs=(v.ref,),
            ordinal=int(v.ordinal),
            book=v.book,
            chapter=int(v.chapter),
            verse=int(v.verse),
            metadata={"paragraph_start": bool(v.paragraph_start), "strongs": list(v.strongs)},
        )
        for v in verses.itertuples(index=False)
    ]

    specs = verse_chunks + peri_chunks
    tokens = count_tokens([s["text"] for s in specs])
    chunks = []
    for spec, n in zip(specs, tokens):
        book = book_by_id(spec["book"])
        chunks.append(
            Chunk(
                source_id=source.id,
                kind=source.kind,
                tokens=n,
                acl=source.acl,
                ruleset=RULESET,
                translation=source.translation,
                testament=book.testament,
                genre=book.genre,
                breadcrumb=f"{source.title} › {book.name} {spec['chapter']}",
                **spec,
            )
        )
    return chunks


def _label(verse) -> str:
    return f"{book_by_id(verse.book).name} {verse.chapter}:{verse.verse}"
