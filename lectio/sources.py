"""The sources file: which texts lectio indexes, who may see them, and how to read them.

Parsing is per source on purpose. A file is only refused as a whole when it is not a YAML list
of sources at all; a single bad entry (no `acl`, unknown format, …) fails when that source is
read, with a `SourceError` naming it, while every other source still indexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KINDS = ("scripture", "commentary", "patristic", "reformation", "modern", "notes", "document", "lexicon")
FORMATS = (
    "sword-bible",
    "sword-commentary",
    "sword-lexicon",
    "markdown",
    "text",
    "html",
    "notes-jsonl",
    "westminster-json",
)
# Formats whose chunker reads `rules:`; elsewhere the key would be ignored silently, so it is refused.
TUNABLE_FORMATS = ("sword-bible",)
METADATA_KEYS = ("title", "author", "translation", "tradition", "tier", "effective_date", "scope")


# `public`, or `kind:name` (user:alice, group:staff). No commas, spaces or '|': a principal is
# always one value, whatever joins or splits it on its way to the database.
PRINCIPAL = re.compile(r"^(public|[a-z][a-z0-9_-]*:[A-Za-z0-9][A-Za-z0-9_.@+-]*)$")


class PrincipalError(ValueError):
    pass


def check_principals(principals) -> tuple[str, ...]:
    """The principals as a tuple, or a PrincipalError naming the first that is not one."""
    if isinstance(principals, str):
        principals = (principals,)
    checked = tuple(principals)
    for p in checked:
        if not isinstance(p, str) or not PRINCIPAL.match(p):
            raise PrincipalError(f"{p!r} is not a principal: expected 'public' or kind:name "
                                 "(user:alice, group:staff) without commas or spaces")
    return checked


class SourceError(Exception):
    """A source that cannot be read; the message names the source and the problem."""

    def __init__(self, source_id: str, problem: str):
        # "*": the sources file as a whole, which the problem names itself.
        super().__init__(problem if source_id == "*" else f"source {source_id!r}: {problem}")
        self.source_id = source_id
        self.problem = problem


@dataclass(frozen=True)
class Source:
    id: str
    kind: str
    format: str
    acl: tuple[str, ...]
    path: Path | None = None  # a file or folder, resolved against the sources file
    module: str | None = None  # a SWORD module name, fetched on demand
    select: str | None = None  # a reference list limiting a Bible to some books or chapters
    chunking: str | None = None  # a named ruleset of the format, when it has several
    # Overrides of the ruleset's tunable rules (e.g. a candidate's paragraph size); the chunker
    # validates them and folds them into the ruleset version, so a change makes a new index.
    rules: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def translation(self) -> str | None:
        return self.metadata.get("translation")

    @property
    def title(self) -> str:
        return self.metadata.get("title") or self.id


def read_entries(sources_file: Path) -> list[dict[str, Any]]:
    """The raw entries of a sources file, each with an `id` (positional when it has none)."""
    try:
        data = yaml.safe_load(Path(sources_file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SourceError("*", f"sources file {sources_file} does not exist") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise SourceError("*", f"sources file {sources_file} is not valid YAML: {_yaml_problem(exc)}") from None
    entries = data.get("sources") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise SourceError("*", f"sources file {sources_file} must hold a list under 'sources'")
    named = []
    for position, entry in enumerate(entries, start=1):
        entry = dict(entry) if isinstance(entry, dict) else {"_invalid": entry}
        entry.setdefault("id", f"source-{position}")
        entry["id"] = str(entry["id"])
        named.append(entry)
    return named


def _yaml_problem(exc: Exception) -> str:
    """One line: what the YAML parser objected to, and where."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def source_ids(sources_file: Path) -> list[str]:
    ids = [e["id"] for e in read_entries(sources_file)]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SourceError(duplicates[0], f"id is used by more than one source in {sources_file}")
    return ids


def parse_source(entry: dict[str, Any], base_dir: Path) -> Source:
    """Validate one entry; raises SourceError naming the source and the problem."""
    sid = entry["id"]
    if "_invalid" in entry:
        raise SourceError(sid, f"entry must be a mapping, got {entry['_invalid']!r}")
    acl = entry.get("acl")
    if acl is None:
        raise SourceError(sid, "has no 'acl'; every source must say who may see it (e.g. acl: [public])")
    if isinstance(acl, str):
        acl = [acl]
    if not isinstance(acl, list) or not acl or not all(isinstance(p, str) and p.strip() for p in acl):
        raise SourceError(sid, f"'acl' must be a non-empty list of principals, got {acl!r}")
    try:
        acl = list(check_principals(p.strip() for p in acl))
    except ValueError as exc:
        raise SourceError(sid, f"'acl': {exc}") from None
    kind = entry.get("kind")
    if kind not in KINDS:
        raise SourceError(sid, f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    fmt = entry.get("format")
    if fmt not in FORMATS:
        raise SourceError(sid, f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    rules = entry.get("rules") or {}
    if not isinstance(rules, dict) or not all(isinstance(k, str) for k in rules):
        raise SourceError(sid, f"'rules' must be a mapping of rule names to values, got {rules!r}")
    if rules and fmt not in TUNABLE_FORMATS:
        raise SourceError(sid, f"format {fmt!r} has no tunable rules; 'rules' applies to {', '.join(TUNABLE_FORMATS)}")
    path, module = entry.get("path"), entry.get("module")
    if not path and not module:
        raise SourceError(sid, "needs a 'path' (relative to the sources file) or a 'module'")
    return Source(
        id=sid,
        kind=kind,
        format=fmt,
        acl=tuple(p.strip() for p in acl),
        path=(base_dir / path).resolve() if path else None,
        module=str(module) if module else None,
        select=entry.get("select"),
        chunking=entry.get("chunking"),
        rules=dict(rules),
        metadata={k: entry[k] for k in METADATA_KEYS if entry.get(k) is not None},
    )


def load_source(sources_file: Path, source_id: str) -> Source:
    for entry in read_entries(sources_file):
        if entry["id"] == source_id:
            return parse_source(entry, Path(sources_file).resolve().parent)
    raise SourceError(source_id, f"is not in {sources_file}")


def load_sources(sources_file: Path) -> dict[str, Source | SourceError]:
    """Every entry of a sources file, read once: its Source, or the SourceError that says why
    that one entry is invalid (one bad entry never hides the others)."""
    base_dir = Path(sources_file).resolve().parent
    loaded: dict[str, Source | SourceError] = {}
    for entry in read_entries(sources_file):
        try:
            loaded[entry["id"]] = parse_source(entry, base_dir)
        except SourceError as exc:
            loaded[entry["id"]] = exc
    return loaded


def granted(sources: dict[str, Source | SourceError]) -> dict[str, tuple[str, ...]]:
    """Source id → the ACL the sources file grants it, for the entries that are valid."""
    return {sid: s.acl for sid, s in sources.items() if isinstance(s, Source)}
