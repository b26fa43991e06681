"""Personal study notes: a JSONL file, one `{"id", "ref", "text"}` per line, private to the user
named in the source's ACL.

Minimal chunking: a note under 200 tokens is embedded whole; 200–800 tokens is split
at paragraph boundaries when it has several paragraphs, else kept whole; over 800 is split at
paragraph boundaries with a 50-token overlap. The model's limit wins over "whole": a single
paragraph past 254 word pieces is split between sentences. No context header is embedded (the
note is already attributed and tied to its verse); the verse ref is metadata and `refs`, and
`header` ("Note on Romans 8:28") is for display only.

A bad line (not JSON, a key written twice, no text, a ref that names no verse, a repeated id)
fails the whole source with its line number: a note is never skipped quietly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from lectio.rulesets.chunk import Chunk, ruleset_version, source_chunk_id
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.readers.raw import RawText, hash_parts, read_text_file, unstorable
from lectio.bible.verses import verse_ids
from lectio.bible.refs import Ref, RefRange, UnknownReference, find_references, parse_reference
from lectio.rulesets.base import Ruleset
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import break_overlong_words, pack, paragraphs, sentences, split_sentences_to_fit

RULES = {
    "whole_below": 200,  # tokens: one chunk
    "overlap_above": 800,  # tokens: paragraphs with overlap
    "piece_target": 200,  # paragraphs are packed up to this many tokens per piece
    "overlap_tokens": 50,  # carried from the end of the previous piece
    "overlap_boundary": "whole trailing sentences within the overlap; a word boundary when those give under half of it",
    "max_tokens": MAX_TEXT_TOKENS,
    "single_paragraph_over_limit": "split between sentences to the model limit, no overlap",
    "header_in_text": False,
    "refs": "the note's ref (a one-chapter range expanded to its verses); refs in the text go to metadata",
    "overlong_words": "a word past the tokenizer's 100 characters is cut every 50 by a space",
    "chunk_ids": "<source id>/<note id>/<piece>",
    "revision": 2,
}
RULESET = ruleset_version("notes", RULES)

_VERSE_ID = re.compile(r"[0-9a-z]+_\d+_\d+")
_NOTE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Note:
    line: int  # in the file, for error messages and provenance
    id: str
    text: str
    ref: str | None  # as written
    ranges: tuple[RefRange, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # any other fields of the line

    @property
    def label(self) -> str | None:
        return "; ".join(r.label for r in self.ranges) or None


# ---------------------------------------------------------------- raw texts


def read(source: Source, corpus_dir: Path | None = None) -> RawText:
    text = read_text_file(source)
    # Blank lines hold no note; every other line is one, and keeps its number for errors.
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise SourceError(source.id, f"file {source.path} holds no notes")
    return RawText(source.id, hash_parts(line for _, line in lines), lines, units=len(lines))


# ---------------------------------------------------------------- parsed structure


def parse(source: Source, raw: RawText) -> list[Note]:
    notes: list[Note] = []
    first_line_of: dict[str, int] = {}
    for number, line in raw.payload:
        note = _note(source, number, line)
        if note.id in first_line_of:
            raise SourceError(
                source.id, f"line {number}: note id {note.id!r} is already used on line {first_line_of[note.id]}"
            )
        first_line_of[note.id] = number
        notes.append(note)
    return notes


def _note(source: Source, number: int, line: str) -> Note:
    def bad(problem: str) -> SourceError:
        return SourceError(source.id, f"line {number}: {problem}")

    try:
        record = json.loads(line, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise bad(f"not valid JSON ({exc.msg}, column {exc.colno})") from None
    except _DuplicateKey as exc:
        raise bad(f"key {exc.key!r} is written twice in one object of {source.path}; "
                  "which value is meant cannot be known") from None
    if not isinstance(record, dict):
        raise bad('expected an object {"id", "ref", "text"}')
    note_id = record.get("id")
    if isinstance(note_id, int) and not isinstance(note_id, bool):
        note_id = str(note_id)
    if not isinstance(note_id, str) or not _NOTE_ID.fullmatch(note_id):
        raise bad(f"'id' must be letters, digits, '_', '.' or '-', got {note_id!r}")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise bad(f"note {note_id!r} has no 'text'")
    ref = record.get("ref")
    ranges: tuple[RefRange, ...] = ()
    if ref is not None:
        if not isinstance(ref, str) or not ref.strip():
            raise bad(f"note {note_id!r}: 'ref' must be a verse reference such as 'Romans 8:28', got {ref!r}")
        try:
            ranges = _ranges(ref)
        except (UnknownReference, ValueError) as exc:
            raise bad(f"note {note_id!r}: 'ref' {ref!r} names no verse: {exc}") from None
    problem = unstorable(" ".join(_strings(record)))
    if problem:
        # A JSON escape (\u0000, \ud800) the file's own bytes did not show.
        raise bad(f"note {note_id!r} " + problem.split(": ", 1)[1])
    extra = {k: v for k, v in record.items() if k not in ("id", "text", "ref")}
    return Note(number, note_id, _tidy(text), ref, ranges, extra)


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object from its pairs, refusing a key written twice: json keeps the last value, which
    would let a second "text" (or "id") quietly replace the one a reader of the file sees first."""
    record: dict[str, Any] = {}
    for key, value in pairs:
        if key in record:
            raise _DuplicateKey(key)
        record[key] = value
    return record


def _strings(value) -> Iterator[str]:
    """Every string in a decoded JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _ranges(ref: str) -> tuple[RefRange, ...]:
    """ "rom_8_28" (a verse id) or what people type ("Romans 8:28-30; 1 Pet 5:7")."""
    ref = ref.strip()
    if _VERSE_ID.fullmatch(ref):
        verse = Ref.from_id(ref)
        return (RefRange(verse, verse),)
    ranges = parse_reference(ref)
    if not ranges:
        raise ValueError("not a reference such as 'Romans 8:28' or 'rom_8_28'")
    return tuple(ranges)


def _tidy(text: str) -> str:
    """Lines inside a paragraph joined, paragraphs kept apart by one blank line, and a word too
    long for the tokenizer cut (see break_overlong_words)."""
    return "\n\n".join(" ".join(break_overlong_words(p).split()) for p in paragraphs(text))


# ---------------------------------------------------------------- chunks


def chunk(source: Source, notes: list[Note]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for note in notes:
        size = count_tokens([note.text])[0]
        pieces, rule = split_note(note.text, size)
        refs = verse_ids(list(note.ranges))
        for n, piece in enumerate(pieces, start=1):
            tokens = count_tokens([piece])[0]
            chunks.append(
                Chunk.for_source(
                    source,
                    RULESET,
                    chunk_id=source_chunk_id(source, note.id, n),
                    granularity="note",
                    text=piece,
                    tokens=tokens,
                    header=f"Note on {note.label}" if note.label else "Note",
                    breadcrumb=" › ".join([source.title, note.label or note.id]),
                    refs=refs,
                    ordinal=note.ranges[0].start_ordinal if note.ranges else None,
                    title=source.title,
                    metadata={
                        "note_id": note.id,
                        "line": note.line,
                        "ref": note.ref,
                        "ref_label": note.label,
                        "ref_ranges": [[r.start.id, r.end.id] for r in note.ranges],
                        "note_tokens": size,
                        "split": rule,
                        "part": n,
                        "parts": len(pieces),
                        "mentions": [r.label for r in find_references(piece)],
                        **note.extra,
                    },
                )
            )
    return chunks


def split_note(text: str, size: int | None = None) -> tuple[list[str], str]:
    """The pieces of a note and the rule that made them: whole, paragraphs, sentences or
    paragraphs+overlap."""
    size = count_tokens([text])[0] if size is None else size
    parts = paragraphs(text)
    if size < RULES["whole_below"] or (size <= RULES["overlap_above"] and len(parts) == 1):
        if size <= MAX_TEXT_TOKENS:
            return [text], "whole"
        # One paragraph past the model's window: "whole" would be truncated, so sentences.
        return split_sentences_to_fit(text, MAX_TEXT_TOKENS), "sentences"
    if size <= RULES["overlap_above"]:
        return _paragraph_pieces(parts, MAX_TEXT_TOKENS), "paragraphs"
    budget = MAX_TEXT_TOKENS - RULES["overlap_tokens"]
    pieces = _paragraph_pieces(parts, budget)
    return _with_overlap(pieces, RULES["overlap_tokens"]), "paragraphs+overlap"


def _paragraph_pieces(parts: list[str], limit: int) -> list[str]:
    """Paragraphs packed up to the piece target; a paragraph over `limit` cut at sentences."""
    units: list[str] = []
    for paragraph in parts:
        units.extend(split_sentences_to_fit(paragraph, limit))
    return pack(units, min(RULES["piece_target"], limit), joiner="\n\n")


def _with_overlap(pieces: list[str], overlap: int) -> list[str]:
    """Each piece after the first opens with the last ~`overlap` tokens of the one before."""
    out = pieces[:1]
    for previous, piece in zip(pieces, pieces[1:]):
        carried = trailing_tokens(previous, overlap)
        out.append(f"{carried}\n\n{piece}" if carried else piece)
    return out


def trailing_tokens(text: str, budget: int) -> str:
    """The end of `text` within `budget` word pieces: the trailing whole sentences that fit,
    or, when those come to under half the budget (one long last sentence), the last words."""
    last_paragraph = paragraphs(text)[-1]
    tail = _trailing(sentences(last_paragraph), budget)
    if count_tokens([" ".join(tail)])[0] * 2 < budget:
        tail = _trailing(last_paragraph.split(), budget)
    return " ".join(tail)


def _trailing(units: list[str], budget: int) -> list[str]:
    """The longest run of units ending the list whose word pieces stay within budget."""
    kept, used = 0, 0
    for size in reversed(count_tokens(units)):
        if used + size > budget:
            break
        kept, used = kept + 1, used + size
    return units[len(units) - kept :]


class Notes(Ruleset[list[Note]], read=read, parse=parse, chunk=chunk):
    name = "notes"
    versions = {"default": RULESET}
    granularities = frozenset({"note"})


NOTES = Notes()
