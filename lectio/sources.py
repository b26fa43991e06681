"""The sources file: which texts lectio indexes, who may see them, and how to read them.

Parsing is per source on purpose. A file is only refused as a whole when it is not a YAML list
of sources at all; a single bad entry (no `acl`, unknown format, …) fails when that source is
read, with a `SourceError` naming it, while every other source still indexes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lectio.settings import load_settings

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
# Prose a person reads, where a tab or a line break is still text. Every other string of an
# entry (id, path, module, acl, rules, …) is a name or key: any control character is refused.
FREE_TEXT_KEYS = (*METADATA_KEYS, "select")


# `public`, or `kind:name` (user:alice, group:staff). No commas, spaces or '|': a principal is
# always one value, whatever joins or splits it on its way to the database. Kept as `^…$` because
# the database embeds the pattern text in a PostgreSQL regex; Python must use `fullmatch`, since
# its `$` also matches before a trailing newline ("user:bob\n"), which PostgreSQL's does not.
PRINCIPAL = re.compile(r"^(public|[a-z][a-z0-9_-]*:[A-Za-z0-9][A-Za-z0-9_.@+-]*)$")


class PrincipalError(ValueError):
    pass


def check_principals(principals) -> tuple[str, ...]:
    """The principals as a tuple, or a PrincipalError naming the first that is not one."""
    if isinstance(principals, str):
        principals = (principals,)
    checked = tuple(principals)
    for p in checked:
        if not isinstance(p, str) or not PRINCIPAL.fullmatch(p):
            raise PrincipalError(f"{p!r} is not a principal: expected 'public' or kind:name "
                                 "(user:alice, group:staff) without commas or spaces")
    return checked


class SourceError(Exception):
    """A source that cannot be read; the message names the source and the problem."""

    # The ACL the entry states, set by load_sources when it is readable (an entry whose format
    # is wrong still says who may see it); None otherwise.
    acl: tuple[str, ...] | None = None

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
    text = _read_text(sources_file)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SourceError("*", f"sources file {sources_file} is not valid YAML: {_yaml_problem(exc, text)}") from None
    entries = data.get("sources") if isinstance(data, dict) else data
    if entries is None or entries == []:
        # Said here: otherwise the run goes on to report "every source failed", which misleads.
        raise SourceError("*", f"sources file {sources_file} lists no sources")
    if not isinstance(entries, list):
        raise SourceError("*", f"sources file {sources_file} must hold a list under 'sources'")
    return [_named(entry, position) for position, entry in enumerate(entries, start=1)]


def _read_text(sources_file: Path) -> str:
    """The file's text, or one SourceError line saying why it cannot be had (never a raw errno)."""
    try:
        return Path(sources_file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SourceError("*", f"sources file {sources_file} does not exist") from None
    except IsADirectoryError:
        raise SourceError("*", f"sources file {sources_file} is a directory, not a file") from None
    except PermissionError:
        raise SourceError("*", f"sources file {sources_file} cannot be read: permission denied") from None
    except OSError as exc:
        raise SourceError("*", f"sources file {sources_file} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SourceError("*", f"sources file {sources_file} is not valid YAML: not UTF-8 ({exc.reason} "
                               f"at byte {exc.start + 1})") from None


def _named(entry: Any, position: int) -> dict[str, Any]:
    entry = dict(entry) if isinstance(entry, dict) else {"_invalid": entry}
    entry.setdefault("id", f"source-{position}")
    entry["id"] = str(entry["id"])
    if _id_problem(entry["id"]):
        # The id becomes a Dagster partition key and a database key; one that cannot be either
        # would sink the whole file, so the entry goes by its position and fails on its own.
        entry["_bad_id"], entry["id"] = entry["id"], f"source-{position}"
    return entry


# An id names a Dagster partition, a database key and a storage folder: `x/a` would make a folder
# inside x's, and `..`, a leading dot or dash, spaces or a ':' are unsafe or ambiguous as file names.
# It also starts its chunks' ids, up to a '/' (lectio.rulesets.chunk.source_chunk_id): an id with
# a '/' could make another source's chunk ids.
SOURCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _id_problem(sid: str) -> str | None:
    # Dagster refuses a partition key holding "..." as it does one holding a control character.
    problem = text_problem(sid, strict=True)
    if problem or (SOURCE_ID.fullmatch(sid) and ".." not in sid):
        return problem
    return ("cannot name a folder or partition: an id starts with a letter or digit and holds only "
            "letters, digits, '.', '-' and '_', never '..'")


def text_problem(value: str, strict: bool) -> str | None:
    """Why a string cannot be stored in PostgreSQL or read by the tokenizer (a NUL, a lone
    surrogate, another control character), or None. `strict`: names and keys, where even a tab or
    a line break is refused; free text keeps those two."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate (U+{ord(value[exc.start]):04X}) at character {exc.start + 1}, which is not text"
    for at, char in enumerate(value, start=1):
        if char == "\x00":
            return f"holds a NUL (\\x00) at character {at}, which cannot be stored"
        if unicodedata.category(char) == "Cc" and (strict or char not in "\t\n"):
            return f"holds a control character (U+{ord(char):04X}) at character {at}"
    return None


def _strings(value: Any, where: str):
    """(field, string) for every string inside `value`, mapping keys included, recursively."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield f"{where}.{key} (the key)", key
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def _yaml_problem(exc: Exception, text: str) -> str:
    """One line: what the YAML parser objected to, and where."""
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.reader.ReaderError):
        # A raw NUL or other control character: the reader gives only an offset, so the line is
        # counted here, as the parser's marks would say it.
        line_start = text.rfind("\n", 0, exc.position) + 1
        where = f"line {text.count(chr(10), 0, exc.position) + 1}, column {exc.position - line_start + 1}"
        return f"unacceptable character #x{exc.character:04x} at {where}"
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def source_ids(sources_file: Path) -> list[str]:
    return [e["id"] for e in _unique_entries(sources_file)]


def _unique_entries(sources_file: Path) -> list[dict[str, Any]]:
    """The file's entries, refused whole when two share an id: which of the two is meant is
    unknowable, and the file decides who may see what an index holds."""
    entries = read_entries(sources_file)
    ids = [e["id"] for e in entries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SourceError(duplicates[0], f"id is used by more than one source in {sources_file}")
    return entries


def parse_entry(entry: dict[str, Any], base_dir: Path, corpus_dir: Path | None = None) -> Source:
    """Validate one entry; raises SourceError naming the source and the problem. `corpus_dir`
    (default: the settings' LECTIO_CORPUS_DIR) is, beside the sources file's folder, where a
    `path` may lead without `allow_outside: true`."""
    sid = entry["id"]
    if "_invalid" in entry:
        raise SourceError(sid, f"entry must be a mapping, got {entry['_invalid']!r}")
    _check_strings(sid, entry)
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
        path=_located(entry, base_dir, corpus_dir) if path else None,
        module=str(module) if module else None,
        select=entry.get("select"),
        chunking=entry.get("chunking"),
        rules=dict(rules),
        metadata={k: entry[k] for k in METADATA_KEYS if entry.get(k) is not None},
    )


def _check_strings(sid: str, entry: dict[str, Any]) -> None:
    """Every string of the entry storable and readable: a NUL passes YAML and sinks the whole
    index build in PostgreSQL, a lone surrogate breaks the tokenizer, so both fail here, alone."""
    if "_bad_id" in entry:
        raise SourceError(sid, f"'id' {entry['_bad_id']!r} {_id_problem(entry['_bad_id'])}")
    for key, value in entry.items():
        if isinstance(key, str):
            _refuse(sid, f"{key} (the key)", key, strict=True)
        for where, text in _strings(value, str(key)):
            _refuse(sid, where, text, strict=key not in FREE_TEXT_KEYS)


def _refuse(sid: str, where: str, text: str, strict: bool) -> None:
    problem = text_problem(text, strict)
    if problem:
        raise SourceError(sid, f"{where!r} {problem}")


def _located(entry: dict[str, Any], base_dir: Path, corpus_dir: Path | None) -> Path:
    """The entry's path, symlinks followed; refused outside the sources file's folder and the
    corpus unless the entry says `allow_outside: true`, so a `../` or a link cannot quietly index
    (and serve) a file nobody meant to share."""
    sid, path, allow = entry["id"], entry["path"], entry.get("allow_outside", False)
    if not isinstance(path, str):
        raise SourceError(sid, f"'path' must be a string, got {path!r}")
    if not isinstance(allow, bool):
        raise SourceError(sid, f"'allow_outside' must be true or false, got {allow!r}")
    resolved = (Path(base_dir) / path).resolve()
    roots = [Path(base_dir).resolve(), Path(corpus_dir or _corpus_dir()).resolve()]
    if allow or any(resolved.is_relative_to(root) for root in roots):
        return resolved
    raise SourceError(sid, f"'path' {path!r} leads to {resolved}, outside the sources file's folder {roots[0]} "
                           f"and the corpus {roots[1]}; add 'allow_outside: true' to the entry if that is meant")


def _corpus_dir() -> Path:
    return load_settings().corpus_dir  # LECTIO_CORPUS_DIR, or the home's corpus, as a run has it


def load_source(sources_file: Path, source_id: str, corpus_dir: Path | None = None) -> Source:
    for entry in read_entries(sources_file):
        if entry["id"] == source_id:
            return parse_entry(entry, Path(sources_file).resolve().parent, corpus_dir)
    raise SourceError(source_id, f"is not in {sources_file}")


def load_sources(sources_file: Path, corpus_dir: Path | None = None) -> dict[str, Source | SourceError]:
    """Every entry of a sources file, read once: its Source, or the SourceError that says why
    that one entry is invalid (one bad entry never hides the others)."""
    base_dir = Path(sources_file).resolve().parent
    corpus_dir = corpus_dir or _corpus_dir()
    loaded: dict[str, Source | SourceError] = {}
    for entry in _unique_entries(sources_file):
        try:
            loaded[entry["id"]] = parse_entry(entry, base_dir, corpus_dir)
        except SourceError as exc:
            exc.acl = _stated_acl(entry)
            loaded[entry["id"]] = exc
    return loaded


def _stated_acl(entry: dict[str, Any]) -> tuple[str, ...] | None:
    """The ACL an invalid entry states, when that part of it is valid: who may still see what
    versions built from it hold (lectio.index.revocation); None when it states none that is."""
    acl = entry.get("acl")
    acl = [acl] if isinstance(acl, str) else acl
    if not isinstance(acl, list) or not acl or not all(isinstance(p, str) for p in acl):
        return None
    try:
        return check_principals(p.strip() for p in acl)
    except PrincipalError:
        return None
