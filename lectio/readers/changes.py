"""Cheap fingerprints of sources, so a watcher can tell which sources changed since it last looked.

A fingerprint covers everything a source's chunks depend on outside lectio's code: its entry in
the sources file (an ACL, `select` or `chunking` change re-chunks it as surely as new text) and
the bytes of the files its reader opens. For file sources that is the file (or folder); for a
SWORD module, the module's conf and data files. Hashing those files is far cheaper than reading
the module (the whole WEB: 0.02 s hashing 4 MB against 0.65 s reading 31k verses; all 16 default
sources 0.05 s against 2.7 s; docs/operations.md), and it never downloads anything: a module not
fetched yet has no fingerprint, so the watcher waits for the first run to fetch it.

The fingerprint is not RawText.content_hash (which is the hash of what the reader extracted);
the two agree on whether a source changed, not on the value.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable

from lectio.readers.corpus import CorpusError, ensure_sword_module, has_module, sword_library
from lectio.sources import SourceError, parse_entry, read_entries

SWORD_FORMATS = ("sword-bible", "sword-commentary", "sword-lexicon")


def fingerprint(entry: dict | None, base_dir: Path, corpus_dir: Path) -> str | None:
    digest = hashlib.sha256()
    # Sorted keys: reordering an entry's keys in YAML is not a change.
    digest.update(json.dumps(entry, sort_keys=True, default=str).encode())
    if entry is None:
        return "removed"
    try:
        source = parse_entry(entry, base_dir)
    except SourceError:
        # An invalid entry still has a fingerprint: editing it should request a run, which then
        # fails with the entry's error and alerts.
        return digest.hexdigest()
    # Resolved: the UI's runs take the corpus folder as LECTIO_CORPUS_DIR spells it, `lectio run`
    # resolved, and the paths are in the digest.
    files = input_files(source, Path(corpus_dir).expanduser().resolve())
    if files is None:
        return None
    for path in files:
        digest.update(str(path).encode() + b"\x00")
        if path.is_file():
            with open(path, "rb") as handle:
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        else:
            digest.update(b"missing")
    return digest.hexdigest()


def input_fingerprint(entry: dict, sources_file: Path, corpus_dir: Path, ruleset: str, model: str) -> str | None:
    """What a source's stored chunks and embeddings were made from: its entry and input files
    (`fingerprint`), the version of the ruleset that chunks it (its rules, not every ruleset's)
    and the embedding model. Equal fingerprints: reading, chunking and embedding again would
    make the same outputs. None where the source's data is not on this machine yet."""
    base = fingerprint(entry, Path(sources_file).resolve().parent, corpus_dir)
    if base is None:
        return None
    return hashlib.sha256(f"{base}|{ruleset}|{model}".encode()).hexdigest()


def fetch_missing_modules(sources_file: Path, corpus_dir: Path, source_ids: Iterable[str] | None = None) -> None:
    """Download the SWORD modules the sources name (those of `source_ids` alone where given) that
    this machine lacks. A run fetches first and fingerprints after, so a fresh machine's first run
    is recorded against its inputs and the next run finds the sources unchanged. A module that
    cannot be had is left for its source's own run to report."""
    base = Path(sources_file).resolve().parent
    wanted = None if source_ids is None else set(source_ids)
    for entry in read_entries(sources_file):
        if wanted is not None and entry.get("id") not in wanted:
            continue
        try:
            source = parse_entry(entry, base)
            if source.format in SWORD_FORMATS and source.path is None and source.module:
                ensure_sword_module(corpus_dir, source.module)
        except (SourceError, CorpusError, OSError):
            continue


def input_files(source, corpus_dir: Path) -> list[Path] | None:
    """The files a source's reader opens; None where its SWORD module is not on this machine yet."""
    if source.format in SWORD_FORMATS:
        library = source.path if source.path is not None else sword_library(corpus_dir)
        return _sword_module_files(library, source.module) if source.module else [library]
    if source.path is not None:
        return _files_under(source.path)
    if source.format == "westminster-json":
        # The packaged standards file: it changes only with the installed package version.
        import importlib.resources

        try:
            return [Path(str(importlib.resources.files("westminster_cli") / "data" / "standards.json"))]
        except ModuleNotFoundError:
            return []
    return []


def _files_under(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path]  # a missing file hashes as "missing"


def _sword_module_files(library: Path, module: str) -> list[Path] | None:
    if not has_module(library, module):
        return None
    conf = next(c for c in (library / "mods.d").iterdir() if c.name.lower() == f"{module.lower()}.conf")
    data_path = None
    for line in conf.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip().lower().startswith("datapath="):
            data_path = line.split("=", 1)[1].strip()
            break
    if not data_path:
        return [conf]
    target = (library / data_path).resolve()
    if target.is_dir():
        return [conf, *_files_under(target)]
    # Dictionaries name a file prefix (…/zld/nave/nave → nave.idx, nave.dat, …).
    return [conf, *sorted(p for p in target.parent.glob(target.name + ".*") if p.is_file())]
