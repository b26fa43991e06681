"""The first two stages every source goes through, whatever its format."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from lectio.sources import Source, SourceError


@dataclass(frozen=True)
class RawText:
    """What a reader got from a source, untouched, with a hash to recognise it next time."""

    source_id: str
    content_hash: str
    payload: Any  # a document's text, or a Bible's list of raw verses
    units: int  # verses, lines … read: reported so a count in can be checked against a count out
    # The source as the sources file described it when it was read: later stages take it from
    # here rather than reading the sources file again, so a run works on one description.
    source: Source | None = None


# Far beyond any document, note file or treatise in the corpus (the largest is under 1 MiB); a
# file past it is more likely a mistake (a dump, a binary) than a text, and would take minutes
# and gigabytes to chunk before anyone heard of it.
MAX_FILE_BYTES = 16 * 2**20
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def hash_parts(parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def read_text_file(source: Source) -> str:
    """The UTF-8 text of a file source, or a SourceError saying why it cannot be read."""
    path = source.path
    if path is None:
        raise SourceError(source.id, f"format {source.format!r} needs a 'path'")
    if not path.is_file():
        raise SourceError(source.id, _not_a_file(source.format, path))
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise SourceError(source.id, f"file {path} is {size / 2**20:.1f} MiB, over the {MAX_FILE_BYTES // 2**20} MiB "
                                     "a single document may be; split it into several sources")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(source.id, f"file {path} is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise SourceError(source.id, f"file {path} is empty")
    problem = unstorable(text)
    if problem:
        raise SourceError(source.id, f"file {path} {problem}")
    return text


def _not_a_file(fmt: str, path) -> str:
    # "does not exist" for a folder sends people looking for a typo in a path that is right.
    if path.is_dir():
        return f"{path} is a directory, not a file; format {fmt!r} reads one file"
    return f"{path} is not a regular file" if path.exists() else f"file {path} does not exist"


def unstorable(text: str) -> str | None:
    """Where `text` holds what PostgreSQL text cannot store or the tokenizer cannot read (a NUL,
    a lone UTF-16 surrogate, as a JSON escape can make), as "line N: …"; None when it holds none.
    Caught when the source is read, so that one source fails alone, not the whole index build."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    if found.group() == "\x00":
        return f"line {line}: holds a NUL byte (\\x00), which cannot be stored"
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    return f"line {line}: holds a lone surrogate (U+{ord(found.group()):04X}) at column {column}, which is not text"
