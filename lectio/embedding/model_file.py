"""The check of an exported model file: the SHA-256 recorded beside it when it was made, and the
file's bytes read once and compared with it, so the bytes checked are the bytes a session runs."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

DIGEST_SUFFIX = ".sha256"  # model.onnx.sha256 beside model.onnx


def digest_file(path: Path) -> Path:
    return path.with_name(path.name + DIGEST_SUFFIX)


def record_digest(path: Path, digest: str) -> None:
    """The SHA-256 of a model file, beside it, in `sha256sum`'s format (so `sha256sum -c` checks
    it too), written whole or not at all."""
    write_whole(digest_file(path), f"{digest}  {path.name}\n")


def recorded_digest(path: Path) -> str | None:
    """The SHA-256 recorded for a model file; None where there is no readable record."""
    try:
        fields = digest_file(path).read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(fields) == 2 and fields[1] == path.name and re.fullmatch(r"[0-9a-f]{64}", fields[0]):
        return fields[0]
    return None


def checked_bytes(path: Path) -> tuple[bytes | None, str]:
    """The file's bytes where their SHA-256 is the one recorded at export, else None and what is
    wrong. Read once: the bytes checked are the bytes a session is made from."""
    if not path.is_file():
        return None, "is missing"
    expected = recorded_digest(path)
    if expected is None:
        return None, f"has no SHA-256 recorded at export ({digest_file(path).name})"
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if hashlib.sha256(data).hexdigest() != expected:
        return None, f"does not match the SHA-256 recorded at its export ({digest_file(path).name})"
    return data, ""


def write_whole(path: Path, text: str) -> None:
    work = path.with_name(f".{path.name}.{os.getpid()}")
    work.write_text(text)
    os.replace(work, path)
