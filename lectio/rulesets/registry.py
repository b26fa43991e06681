"""The per-source stages, dispatched on the source's format: read → parse → chunk.

The source is validated once, where it is read; the raw text and the parsed structure carry it
on, so every later stage works on the same description and none reads the sources file again.
A bad entry fails its own read with a SourceError and never another source's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from lectio.rulesets import commentary
from lectio.rulesets import documents
from lectio.rulesets import strongs
from lectio.rulesets import modern
from lectio.rulesets import notes
from lectio.rulesets import patristic
from lectio.rulesets import westminster
from lectio.rulesets import scripture
from lectio.rulesets import theses
from lectio.rulesets.chunk import Chunk
from lectio.embedding.model import model_id
from lectio.readers.changes import input_fingerprint
from lectio.readers.raw import RawText
from lectio.sources import Source, SourceError, load_source, parse_entry, read_entries


@dataclass(frozen=True)
class Format:
    read: Callable[[Source, Path], RawText]
    parse: Callable[[Source, RawText], Any]
    chunk: Callable[[Source, Any], list[Chunk]]
    ruleset: str


def _module_format(module) -> Format:
    # A module with several named rulesets (scripture's baselines) is versioned by all of them.
    versions = getattr(module, "RULESETS", {"default": module.RULESET})
    return Format(module.read, module.parse, module.chunk, ",".join(sorted(versions.values())))


# (format, kind) → handler; kind None is the format's default. The same file format can hold
# different content types (a markdown document, a patristic text), each with its own ruleset.
FORMATS: dict[tuple[str, str | None], Format] = {
    ("sword-bible", None): _module_format(scripture),
    ("markdown", None): _module_format(documents),
    ("text", None): _module_format(documents),
    ("html", None): _module_format(documents),
    ("sword-commentary", None): _module_format(commentary),
    ("sword-lexicon", None): _module_format(strongs),
    ("westminster-json", None): _module_format(westminster),
    ("text", "reformation"): _module_format(theses),
    ("notes-jsonl", None): _module_format(notes),
    ("markdown", "patristic"): _module_format(patristic),
    ("text", "patristic"): _module_format(patristic),
    ("markdown", "modern"): _module_format(modern),
    ("text", "modern"): _module_format(modern),
}


def input_fingerprints(sources_file: Path, corpus_dir: Path, model: str | None = None) -> dict[str, str | None]:
    """source id → what its stored chunks and embeddings are made from: its entry and input files,
    the version of the one ruleset that chunks it and the embedding model (`model`, the id of the
    embedder that will embed them; the configured one when None). A rule change moves only the
    fingerprints of the sources that ruleset chunks. None where the source's data is not on this
    machine yet."""
    model, base = model or model_id(), Path(sources_file).resolve().parent
    prints: dict[str, str | None] = {}
    for entry in read_entries(sources_file):
        try:
            ruleset = format_of(parse_entry(entry, base)).ruleset
        except SourceError:
            ruleset = ""  # still a fingerprint: editing the entry should run it, to fail with its error
        prints[entry["id"]] = input_fingerprint(entry, sources_file, corpus_dir, ruleset, model)
    return prints


@dataclass(frozen=True)
class Parsed:
    """A source's parsed structure, with the source it was parsed as."""

    source: Source
    structure: Any
    units_read: int


def format_of(source: Source) -> Format:
    fmt = FORMATS.get((source.format, source.kind)) or FORMATS.get((source.format, None))
    if fmt is None:
        raise SourceError(source.id, f"format {source.format!r} has no reader in this version of lectio")
    return fmt


def read_source(source: Source, corpus_dir: Path) -> RawText:
    return replace(format_of(source).read(source, corpus_dir), source=source)


def parse_source(raw: RawText) -> Parsed:
    if raw.source is None:
        raise ValueError(f"raw text of {raw.source_id!r} does not carry its source; read it with read_source")
    return Parsed(raw.source, format_of(raw.source).parse(raw.source, raw), raw.units)


def chunk_source(parsed: Parsed) -> list[Chunk]:
    source = parsed.source
    chunks = format_of(source).chunk(source, parsed.structure)
    ids = [c.chunk_id for c in chunks]
    if len(set(ids)) != len(ids):
        raise SourceError(source.id, f"{len(ids) - len(set(ids))} duplicate chunk ids")
    return chunks


def run_source(sources_file: Path, source_id: str, corpus_dir: Path) -> tuple[Parsed, list[Chunk]]:
    """All three stages for one source of a sources file, outside Dagster (tests, tools)."""
    parsed = parse_source(read_source(load_source(sources_file, source_id), corpus_dir))
    return parsed, chunk_source(parsed)


def structure_facts(parsed: Parsed) -> dict[str, Any]:
    """What the parsed-structure stage shows about a source: verse counts for a Bible (empty
    slots listed, not dropped), the number of structural units for anything else."""
    import pandas as pd

    units_read = parsed.units_read
    parsed = parsed.structure
    if isinstance(parsed, pd.DataFrame):  # scripture: one row per verse slot
        empty = parsed.loc[parsed["text"] == "", "ref"].tolist()
        return {
            "verse_slots": len(parsed),
            "verses": len(parsed) - len(empty),
            "empty_verses": len(empty),
            "empty_verse_refs": ", ".join(empty) or "none",
            "paragraph_starts": int(parsed["paragraph_start"].sum()),
            "books": int(parsed["book"].nunique()),
            "chapters": int(parsed[["book", "chapter"]].drop_duplicates().shape[0]),
            "units_read": units_read,
        }
    facts: dict[str, Any] = {"units_read": units_read}
    if hasattr(parsed, "__len__"):
        facts["structural_units"] = len(parsed)
    return facts
