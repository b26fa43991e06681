"""The chunk: the unit lectio embeds, indexes and returns, whatever its content type."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd


# Every granularity a ruleset cuts; the quality checks refuse any other (a typo in a ruleset
# would otherwise make chunks that no filter or metric knows).
GRANULARITIES = frozenset({
    "verse", "pericope", "paragraph", "chapter", "window",  # scripture
    "commentary", "lexicon-entry", "note", "register", "qa", "preface", "thesis",
    "section", "document-section",
})


def content_hash(text: str) -> str:
    """Hash of the text that is embedded: the embedding cache key (with the model id)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Joins a source's id to the id its ruleset gives a chunk within the source. No source id holds
# it (lectio.sources.SOURCE_ID), so whatever a ruleset appends, two sources never make one id.
ID_SEPARATOR = "/"


def source_chunk_id(source, *parts: object) -> str:
    """`<source id>/<part>/…`: a chunk id that no other source can make."""
    return ID_SEPARATOR.join([source.id, *map(str, parts)])


def ruleset_version(name: str, rules: dict[str, Any]) -> str:
    """A version derived from the rules themselves: change a rule and the version changes."""
    digest = hashlib.sha256(json.dumps(rules, sort_keys=True).encode()).hexdigest()[:10]
    return f"{name}-{digest}"


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    source_id: str
    kind: str  # the source's kind: scripture, commentary, …
    granularity: str  # verse, pericope, paragraph, …
    text: str  # exactly what is embedded
    tokens: int  # word pieces of `text` under the embedding model's tokenizer
    acl: tuple[str, ...]
    ruleset: str
    # A context line handed to a model in front of `text` but not embedded (a verse's reference).
    header: str | None = None
    breadcrumb: str | None = None
    parent_id: str | None = None
    refs: tuple[str, ...] = ()  # verse refs this chunk covers, e.g. ("rom_8_28",)
    ordinal: int | None = None  # canonical position of the first ref, for range lookups
    translation: str | None = None
    book: str | None = None
    chapter: int | None = None
    verse: int | None = None
    testament: str | None = None
    genre: str | None = None
    title: str | None = None
    # "answer_span": [start, end] marks the part of `text` a search result carries, where the
    # rest is there only to help the chunk be found (a paragraph's neighbouring sentences).
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_source(cls, source, ruleset: str, **fields) -> "Chunk":
        """A chunk of `source`: its id, kind and ACL are the source's, never a ruleset's choice,
        so no ruleset can show a chunk to anyone its source's ACL does not name."""
        return cls(source_id=source.id, kind=source.kind, acl=tuple(source.acl), ruleset=ruleset, **fields)

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


CHUNK_COLUMNS = [f.name for f in fields(Chunk)] + ["content_hash"]


def chunks_frame(chunks: list[Chunk]) -> pd.DataFrame:
    rows = []
    for chunk in chunks:
        row = asdict(chunk)
        row["acl"] = list(chunk.acl)
        row["refs"] = list(chunk.refs)
        row["content_hash"] = chunk.content_hash
        rows.append(row)
    frame = pd.DataFrame(rows, columns=CHUNK_COLUMNS)
    for column in ("ordinal", "chapter", "verse"):
        frame[column] = frame[column].astype("Int64")
    return frame
