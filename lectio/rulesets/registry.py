"""The per-source stages, dispatched on the source's format: read → parse → chunk.

The source is validated once, where it is read; the raw text and the parsed structure carry it
on, so every later stage works on the same description and none reads the sources file again.
A bad entry fails its own read with a SourceError and never another source's. After chunking,
every ruleset is held here to the contract it states (lectio.rulesets.base).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lectio.rulesets.base import Ruleset
from lectio.rulesets.chunk import GRANULARITIES, Chunk
from lectio.rulesets.commentary import COMMENTARY
from lectio.rulesets.documents import DOCUMENTS
from lectio.rulesets.modern import MODERN
from lectio.rulesets.notes import NOTES
from lectio.rulesets.patristic import PATRISTIC
from lectio.rulesets.scripture import SCRIPTURE, chapter_share
from lectio.rulesets.strongs import LEXICON
from lectio.rulesets.theses import THESES
from lectio.rulesets.westminster import WESTMINSTER
from lectio.embedding import runtime_choice
from lectio.embedding.model import configured_name, model_id
from lectio.embedding.packaged import release_of
from lectio.readers.changes import fetch_missing_modules, input_files, input_fingerprint
from lectio.readers.raw import MAX_FILE_BYTES, RawText
from lectio.sources import Source, SourceError, load_source, parse_entry, read_entries, read_entry


@dataclass(frozen=True)
class Format:
    rules: Ruleset
    ruleset: str  # the rules' version, recorded in each of its sources' fingerprints

    @classmethod
    def of(cls, rules: Ruleset) -> "Format":
        # Checked when registered: a ruleset that cuts a new granularity adds it to
        # GRANULARITIES, so the quality checks and the filters know it.
        if unknown := rules.granularities - GRANULARITIES:
            raise ValueError(f"ruleset {rules.name!r} cuts granularities no filter knows: {', '.join(sorted(unknown))}")
        return cls(rules, rules.version)


# (format, kind) → handler; kind None is the format's default. The same file format can hold
# different content types (a markdown document, a patristic text), each with its own ruleset.
FORMATS: dict[tuple[str, str | None], Format] = {
    ("sword-bible", None): Format.of(SCRIPTURE),
    ("markdown", None): Format.of(DOCUMENTS),
    ("text", None): Format.of(DOCUMENTS),
    ("html", None): Format.of(DOCUMENTS),
    ("sword-commentary", None): Format.of(COMMENTARY),
    ("sword-lexicon", None): Format.of(LEXICON),
    ("westminster-json", None): Format.of(WESTMINSTER),
    ("text", "reformation"): Format.of(THESES),
    ("notes-jsonl", None): Format.of(NOTES),
    ("markdown", "patristic"): Format.of(PATRISTIC),
    ("text", "patristic"): Format.of(PATRISTIC),
    ("markdown", "modern"): Format.of(MODERN),
    ("text", "modern"): Format.of(MODERN),
}
# The formats a sources file may name, in the order above.
FORMAT_NAMES = tuple(dict.fromkeys(name for name, _ in FORMATS))
# The formats whose `select` names chapters (lectio.rulesets.scripture.chapter_filter).
CHAPTER_SELECTS = ("sword-bible", "sword-commentary")
# The formats whose reader is read_text_file, which refuses a folder or a file over MAX_FILE_BYTES
# before reading a byte of it.
TEXT_FILE_FORMATS = ("markdown", "text", "html", "notes-jsonl")


def input_fingerprints(sources_file: Path, corpus_dir: Path, model: str | None = None) -> dict[str, str | None]:
    """source id → what its stored chunks and embeddings are made from: its entry and input files,
    the version of the one ruleset that chunks it and the embedding model (`model`, the id of the
    embedder that will embed them; the configured one when None). A rule change moves only the
    fingerprints of the sources that ruleset chunks. None where the source's data is not on this
    machine yet."""
    model = model or model_id()
    return {entry["id"]: _entry_fingerprint(entry, sources_file, corpus_dir, model)
            for entry in read_entries(sources_file)}


def input_fingerprints_of(sources_file: Path, corpus_dir: Path, source_ids: list[str],
                          model: str | None = None) -> dict[str, str | None]:
    """input_fingerprints for these sources alone (an id the file lacks has none): one source's
    run fingerprints its own inputs, not every source's (O(N) per run, O(N²) over a run of N)."""
    model = model or model_id()
    entries = {sid: read_entry(sources_file, sid) for sid in source_ids}
    return {sid: _entry_fingerprint(entry, sources_file, corpus_dir, model) for sid, entry in entries.items()
            if entry is not None}


def _entry_fingerprint(entry: dict, sources_file: Path, corpus_dir: Path, model: str) -> str | None:
    try:
        ruleset = format_of(parse_entry(entry, Path(sources_file).resolve().parent)).ruleset
    except SourceError:
        ruleset = ""  # still a fingerprint: editing the entry should run it, to fail with its error
    return input_fingerprint(entry, sources_file, corpus_dir, ruleset, model)


@dataclass(frozen=True)
class Parsed:
    """A source's parsed structure, with the source it was parsed as."""

    source: Source
    structure: Any
    units_read: int


def format_of(source: Source) -> Format:
    """The format that reads and chunks `source`: the one place that knows every format and which
    of them take `rules:`; a SourceError naming the source otherwise."""
    fmt = FORMATS.get((source.format, source.kind)) or FORMATS.get((source.format, None))
    if fmt is None:
        raise SourceError(source.id, f"unknown format {source.format!r}; expected one of {', '.join(FORMAT_NAMES)}",
                          "format")
    if source.rules and not fmt.rules.tunable:
        tunable = ", ".join(dict.fromkeys(name for (name, _), f in FORMATS.items() if f.rules.tunable))
        raise SourceError(source.id, f"format {source.format!r} has no tunable rules; 'rules' applies to {tunable}",
                          "rules")
    return fmt


def source_and_inputs(sources_file: Path, corpus_dir: Path, source_id: str,
                      model: str | None = None) -> tuple[Source, str | None]:
    """One source of a sources file, read once: its entry validated (its format and rules by the
    format's own word) and its input fingerprint (as input_fingerprints gives it; None where its
    data is not on this machine yet). A SourceError naming the source and, where one is at
    fault, the entry's field."""
    entry = read_entry(sources_file, source_id)
    if entry is None:
        raise SourceError(source_id, f"is not in {sources_file}")
    source = parse_entry(entry, Path(sources_file).resolve().parent)
    return source, input_fingerprint(entry, sources_file, corpus_dir, format_of(source).ruleset, model or model_id())


def input_bytes(sources_file: Path, corpus_dir: Path) -> int | None:
    """What the sources' inputs weigh: the bytes their readers read (a file a reader refuses unread
    weighs nothing), a chapter `select`'s share of its SWORD module alone (the fixtures read eight
    chapters of a 4 MB Bible). None where a SWORD module is not on this machine yet. An entry that
    does not parse weighs nothing: its run fails on its own."""
    try:
        written = Path(sources_file).stat()
    except OSError:
        return 0  # no sources file: its runs fail with their own error
    # Once per sources file as written: each source's run in `lectio run`'s process settles the
    # runtime, and weighing every entry in each of N runs would cost O(N²). A weight not known
    # yet is not kept: the modules are fetched, and weighed, next.
    key = (Path(sources_file), written.st_mtime_ns, written.st_size, Path(corpus_dir))
    if key not in _WEIGHED:
        weight = _weighed(Path(sources_file), Path(corpus_dir))
        if weight is None:
            return None
        _WEIGHED.clear()
        _WEIGHED[key] = weight
    return _WEIGHED[key]


_WEIGHED: dict[tuple, int] = {}


def _weighed(sources_file: Path, corpus_dir: Path) -> int | None:
    total = 0
    for entry in read_entries(sources_file):
        try:
            source = parse_entry(entry, Path(sources_file).resolve().parent)
        except SourceError:
            continue
        weight = _source_weight(source, corpus_dir)
        if weight is None:
            return None
        total += weight
    return total


def _source_weight(source: Source, corpus_dir: Path) -> int | None:
    """The bytes `source`'s reader reads; None where its SWORD module is not on this machine yet."""
    if source.format in TEXT_FILE_FORMATS:
        return _text_file_weight(source.path)
    files = input_files(source, corpus_dir)
    if files is None:
        return None
    share = chapter_share(source) if source.format in CHAPTER_SELECTS else 1.0
    return int(share * sum(path.stat().st_size for path in files if path.is_file()))


def _text_file_weight(path: Path | None) -> int:
    """What read_text_file reads of `path`: the whole file, or nothing where it refuses it unread
    (a folder, a file over MAX_FILE_BYTES), so a file no run reads cannot buy a measurement."""
    try:
        size = path.stat().st_size if path is not None and path.is_file() else 0
    except OSError:
        return 0
    return size if size <= MAX_FILE_BYTES else 0


def settle_runtime(sources_file: Path, corpus_dir: Path) -> None:
    """The home's embedding runtime settled before a run takes its model id: measured where these
    sources' inputs pay for it, provisional where they do not (lectio.embedding.runtime_choice.settle);
    nothing to weigh once it is measured."""
    name = configured_name()
    if not runtime_choice.settled(name, release_of(name)):
        runtime_choice.settle(name, release_of(name), _fetched_weight(sources_file, corpus_dir))


def _fetched_weight(sources_file: Path, corpus_dir: Path) -> int | None:
    """input_bytes, the SWORD modules this machine lacks fetched first where the weight needs them,
    whichever run settles the runtime (the UI's, a sensor's, `lectio run`'s): an unknown weight is
    measured (minutes, even for a few chapters), a fetch takes seconds and the runs read the
    modules anyway. None where a fetch failed."""
    weight = input_bytes(sources_file, corpus_dir)
    if weight is None:
        fetch_missing_modules(sources_file, corpus_dir)
        weight = input_bytes(sources_file, corpus_dir)
    return weight


def read_source(source: Source, corpus_dir: Path) -> RawText:
    return replace(format_of(source).rules.read(source, corpus_dir), source=source)


def parse_source(raw: RawText) -> Parsed:
    if raw.source is None:
        raise ValueError(f"raw text of {raw.source_id!r} does not carry its source; read it with read_source")
    return Parsed(raw.source, format_of(raw.source).rules.parse(raw.source, raw), raw.units)


def chunk_source(parsed: Parsed) -> list[Chunk]:
    source = parsed.source
    rules = format_of(source).rules
    chunks = rules.chunk(source, parsed.structure)
    hold_to_contract(source, rules, chunks)
    return chunks


def hold_to_contract(source: Source, rules: Ruleset, chunks: list[Chunk]) -> None:
    """What every ruleset promises of its chunks, checked here once for all of them: ids unique
    (two chunks with one id would overwrite each other in the index), a granularity the ruleset
    declares (filters and metrics know no other), and no text longer than the ruleset's cap (the
    model would cut it: a defect, never a warning)."""
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_id in seen:
            raise SourceError(source.id, f"chunk {chunk.chunk_id} is made twice; chunk ids must be unique")
        seen.add(chunk.chunk_id)
        if chunk.granularity not in rules.granularities:
            raise SourceError(source.id, f"chunk {chunk.chunk_id} has granularity {chunk.granularity!r}, which "
                                         f"ruleset {rules.name!r} does not cut ({', '.join(sorted(rules.granularities))})")
        if not rules.fits(chunk.granularity, chunk.tokens):
            raise SourceError(source.id, f"chunk {chunk.chunk_id} has {chunk.tokens} word pieces; its ruleset "
                                         f"allows {rules.max_tokens} (the model would cut the rest)")


def run_source(sources_file: Path, source_id: str, corpus_dir: Path) -> tuple[Parsed, list[Chunk]]:
    """All three stages for one source of a sources file, outside Dagster (tests, tools)."""
    parsed = parse_source(read_source(load_source(sources_file, source_id), corpus_dir))
    return parsed, chunk_source(parsed)


def structure_facts(parsed: Parsed) -> dict[str, Any]:
    """What the parsed-structure stage shows about a source: what its ruleset tells of its
    structure (verse counts for a Bible, the number of structural units for anything else)."""
    return {"units_read": parsed.units_read, **format_of(parsed.source).rules.facts(parsed.structure)}
