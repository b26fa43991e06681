"""The first two stages every source goes through, whatever its format."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RawText:
    """What a reader got from a source, untouched, with a hash to recognise it next time."""

    source_id: str
    content_hash: str
    payload: Any  # a document's text, or a Bible's list of raw verses
    units: int  # verses, lines … read: reported so a count in can be checked against a count out


def hash_parts(parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()
