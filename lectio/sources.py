"""The sources file: which texts lectio indexes, who may see them, and how to read them.

Parsing is per source on purpose. A file is only refused as a whole when it is not a YAML list
of sources at all; a single bad entry (no `acl`, unknown format, …) fails when that source is
read, with a `SourceError` naming it, while every other source still indexes.

The file is the ACL authority, so it is read strictly: a key written twice (`acl: [user:alice]`
then `acl: [public]`) fails its entry, or the file when it is a top-level key, rather than letting
the last one win; YAML anchors and aliases are refused before anything is built from them.
"""

from __future__ import annotations

import copy
import datetime
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from lectio.settings import load_settings

KINDS = ("scripture", "commentary", "patristic", "reformation", "modern", "notes", "document", "lexicon")
METADATA_KEYS = ("title", "author", "translation", "tradition", "tier", "effective_date", "scope")
# Prose a person reads, where a tab or a line break is still text. Every other string of an
# entry (id, path, module, acl, rules, …) is a name or key: any control character is refused.
FREE_TEXT_KEYS = (*METADATA_KEYS, "select")
# Keys that hold one value: a list or mapping there is a mistake (or a nested alias expansion) that
# would otherwise be stored and shown as a title, an author, …
SCALAR_KEYS = (*METADATA_KEYS, "select", "chunking", "module")
SCALARS = (str, int, float, datetime.date)  # what YAML makes of text, numbers, booleans and dates


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


def callers(principals) -> tuple[str, ...]:
    """Who a caller is, checked: its principals, and `public` always, since what anyone may read
    any caller may (every door, CLI, library and service, asks by this one rule)."""
    return tuple(dict.fromkeys(("public", *check_principals(principals))))


class SourceError(Exception):
    """A source that cannot be read; the message names the source and the problem."""

    # The ACL the entry states, set by load_sources when it is readable (an entry whose format
    # is wrong still says who may see it); None otherwise.
    acl: tuple[str, ...] | None = None

    def __init__(self, source_id: str, problem: str, field: str | None = None):
        # "*": the sources file as a whole, which the problem names itself.
        super().__init__(problem if source_id == "*" else f"source {source_id!r}: {problem}")
        self.source_id = source_id
        self.problem = problem
        # The entry's key at fault ("acl", "kind", "path", …), where one is; None for the entry or
        # its file as a whole. The UI's entry check shows it.
        self.field = field


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
    """The raw entries of a sources file, each with an `id` (positional when it has none). An
    entry that cannot be built (a key written twice, a date that is none) comes back as its id,
    its ACL where readable, and `_problem`, for parse_entry to fail it alone."""
    return [copy.deepcopy(entry) for entry in _parsed(sources_file).entries]


def read_entry(sources_file: Path, source_id: str) -> dict[str, Any] | None:
    """The first entry of the file with this id, as read_entries gives it; None when none has it.
    A run reads its one source's entry this way: the whole file is parsed once per content, not
    once per source (a run over N sources parsed it N times, O(N²) in all)."""
    parsed = _parsed(sources_file)
    position = parsed.positions.get(source_id)
    return None if position is None else copy.deepcopy(parsed.entries[position])


@dataclass(frozen=True)
class _Entries:
    entries: tuple[dict[str, Any], ...]
    positions: dict[str, int]  # id → the position of its first entry


def _parsed(sources_file: Path) -> _Entries:
    """The file's entries, parsed again only when its text changed: the text is read every time
    (an edit between two reads is seen) and is the cache's key with the path the errors name."""
    return _parse_text(str(sources_file), _read_text(sources_file))


@lru_cache(maxsize=8)
def _parse_text(sources_file: str, text: str) -> _Entries:
    # Cached values are shared: read_entries and read_entry hand out copies only.
    entries = _apart(tuple(_named(entry, position)
                           for position, entry in enumerate(_entries(sources_file, text), start=1)))
    positions: dict[str, int] = {}
    for position, entry in enumerate(entries):
        positions.setdefault(entry["id"], position)
    return _Entries(entries, positions)


def _entries(sources_file: str, text: str) -> list[Any]:
    try:
        loader = _SourcesLoader(text)  # a raw control character is refused here already
        try:
            nodes = _entry_nodes(sources_file, loader)
            return [_constructed(loader, node, text) for node in nodes]
        finally:
            loader.dispose()
    except _Refused as exc:
        raise SourceError("*", f"sources file {sources_file}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SourceError("*", f"sources file {sources_file} is not valid YAML: {_yaml_problem(exc, text)}") from None


class _Refused(yaml.YAMLError):
    """Valid YAML that a sources file does not take; the message names the line."""


MERGE_TAG = "tag:yaml.org,2002:merge"
NULL_TAG = "tag:yaml.org,2002:null"
# The deepest lists and mappings a sources file may nest, counted from the document. An entry's
# values nest two or three levels (`rules: {split: [...]}`); PyYAML composes and builds a node
# by recursion, as do the readers of an entry after it, so 300 levels ended in a RecursionError
# that failed the whole file. A node nested deeper stands for a refusal of its own entry alone.
MAX_NESTING = 32
# Past this many brackets open at once the file is not read at all: PyYAML's scanner walks every
# open bracket at each token, and 20,000 on one line (40 KB) took 36 s before a node was made.
MAX_BRACKETS = 1000
_TOO_DEEP_TAG = "tag:lectio,2024:too-deep"
_OPENS, _CLOSES = (yaml.SequenceStartEvent, yaml.MappingStartEvent), (yaml.SequenceEndEvent, yaml.MappingEndEvent)


class _SourcesLoader(yaml.SafeLoader):
    """SafeLoader, strict where the sources file decides who may see what.

    Anchors and aliases are refused as the composer meets them, before a node is built from
    them: nine levels of aliased lists fit in 600 bytes and expand to a billion items. A mapping
    with a key written twice is refused as it is built, where YAML would keep the last value. A
    list or mapping nested past MAX_NESTING is read past and fails the entry holding it."""

    nesting = 0  # the lists and mappings open around the node being composed

    def compose_node(self, parent, index):
        event = self.peek_event()
        alias = isinstance(event, yaml.AliasEvent)
        if alias or event.anchor is not None:
            what = f"alias *{event.anchor}" if alias else f"anchor &{event.anchor}"
            raise _Refused(f"line {event.start_mark.line + 1} holds the YAML {what}; a sources file takes no "
                           "anchors or aliases, write each value out")
        if not isinstance(event, _OPENS):
            return super().compose_node(parent, index)
        if self.nesting >= MAX_NESTING:
            return self.skip_too_deep()
        self.nesting += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.nesting -= 1

    def skip_too_deep(self) -> yaml.ScalarNode:
        """The list or mapping that opens here, read past without recursion (whatever its depth),
        as one node that refuses to be built: the entry holding it fails, naming its line."""
        start, level = self.peek_event().start_mark, 0
        while True:
            event = self.get_event()
            level += isinstance(event, _OPENS) - isinstance(event, _CLOSES)
            if level == 0:
                return yaml.ScalarNode(_TOO_DEEP_TAG, "", start, event.end_mark)

    def fetch_flow_collection_start(self, TokenClass):
        if self.flow_level >= MAX_BRACKETS:
            mark = self.get_mark()
            raise _Refused(f"brackets nested more than {MAX_BRACKETS:,} deep at line {mark.line + 1}, column "
                           f"{mark.column + 1}; the file is not read (an entry nests at most {MAX_NESTING})")
        super().fetch_flow_collection_start(TokenClass)

    def construct_too_deep(self, node: yaml.ScalarNode):
        raise _Refused(f"lists and mappings nested more than {MAX_NESTING} deep at {_place(node)}; "
                       "a sources file takes at most that many")

    def construct_mapping(self, node, deep=False):
        self.check_keys(node)
        return super().construct_mapping(node, deep=deep)

    def check_keys(self, node: yaml.MappingNode) -> None:
        """A refusal naming the place of the first key written twice, or of a `<<` merge
        (which lets one key hide another the same way)."""
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                raise _Refused(f"a '<<' merge key at {_place(key_node)}, which a sources file does not take")
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:
                continue  # unhashable: BaseConstructor refuses it, naming the place
            if first is not key_node:
                raise _Refused(f"duplicate key {key!r} at {_place(key_node)} (first at {_place(first)}); "
                               "which value is meant cannot be known")

    def construct_entry(self, node: yaml.Node) -> Any:
        """One node built in full; the cache is dropped after, so one entry's failure leaves no
        half-built state behind for the next."""
        try:
            return self.construct_object(node, deep=True)
        finally:
            self.constructed_objects, self.recursive_objects = {}, {}


_SourcesLoader.add_constructor(_TOO_DEEP_TAG, _SourcesLoader.construct_too_deep)


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


def _place(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"


def strict_yaml(text: str) -> Any:
    """One YAML document read as strictly as the sources file: no anchor or alias (nothing is
    expanded), no key written twice. A yaml.YAMLError naming the line otherwise."""
    loader = _SourcesLoader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else loader.construct_entry(node)
    finally:
        loader.dispose()


def _entry_nodes(sources_file: Path, loader: _SourcesLoader) -> list[yaml.Node]:
    """The nodes of the file's entries, none of them built yet: the list under `sources`, or the
    document itself when it is a list."""
    root = loader.get_single_node()
    entries = _sources_node(loader, root) if isinstance(root, yaml.MappingNode) else root
    if entries is None or entries.tag == NULL_TAG or (isinstance(entries, yaml.SequenceNode) and not entries.value):
        # Said here: otherwise the run goes on to report "every source failed", which misleads.
        raise SourceError("*", f"sources file {sources_file} lists no sources")
    if not isinstance(entries, yaml.SequenceNode):
        raise SourceError("*", f"sources file {sources_file} must hold a list under 'sources'")
    return entries.value


def _sources_node(loader: _SourcesLoader, root: yaml.MappingNode) -> yaml.Node | None:
    """The value under the top-level `sources` key. A key written twice at the top level, or in
    another top-level value, refuses the whole file: it belongs to no one entry."""
    found = None
    for key_node, value_node in root.value:
        try:
            if loader.construct_entry(key_node) == "sources":
                found = value_node
            else:
                loader.construct_entry(value_node)
        except ValueError as exc:  # a date that is none (2024-13-01)
            raise _Refused(f"the value at {_place(value_node)} cannot be read: {exc}") from None
    loader.check_keys(root)
    return found


def _constructed(loader: _SourcesLoader, node: yaml.Node, text: str) -> Any:
    """The entry as built; where it cannot be, what of it can be read, and `_problem`."""
    try:
        return loader.construct_entry(node)
    except yaml.YAMLError as exc:
        problem = _yaml_problem(exc, text)
    except ValueError as exc:  # a date that is none: the constructor says what, not where
        problem = f"the entry at {_place(node)} cannot be read: {exc}"
    return {**_readable(loader, node), "_problem": problem}


def _readable(loader: _SourcesLoader, node: yaml.Node) -> dict[str, Any]:
    """The `id` and `acl` of an entry that cannot be built, each where it is written once and
    can be: the id names the failure, and the ACL still says who may see versions built from
    the entry before (lectio.index.revocation). An `acl` written twice states none."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    found = {}
    for name in ("id", "acl"):
        values = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name]
        if len(values) == 1:
            try:
                found[name] = loader.construct_entry(values[0])
            except (yaml.YAMLError, ValueError):
                pass
    return found


def _named(entry: Any, position: int) -> dict[str, Any]:
    entry = dict(entry) if isinstance(entry, dict) else {"_invalid": entry}
    entry.setdefault("id", f"source-{position}")
    entry["id"] = str(entry["id"])
    if _id_problem(entry["id"]):
        # The id becomes a Dagster partition key and a database key; one that cannot be either
        # would sink the whole file, so the entry goes by its position and fails on its own.
        entry["_bad_id"], entry["id"] = entry["id"], f"source-{position}"
    return entry


def _apart(entries: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
    """Each entry renamed for its bad id under a name no other entry holds: `source-2` may be a
    real source's id, and the file was then refused whole as naming one id twice, blaming the
    valid entry. The renamed one goes by `source-2-2` (or the next free number) instead."""
    taken = {entry["id"] for entry in entries if "_bad_id" not in entry}
    for entry in entries:
        if "_bad_id" in entry:
            base, number = entry["id"], 1
            while entry["id"] in taken:
                number += 1
                entry["id"] = f"{base}-{number}"
            taken.add(entry["id"])
    return entries


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
    # Counted once: `ids.count` for every id was quadratic in the number of sources.
    duplicates = sorted(i for i, n in Counter(e["id"] for e in entries).items() if n > 1)
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
    if "_problem" in entry:
        raise SourceError(sid, entry["_problem"])
    _check_strings(sid, entry)
    _check_scalars(sid, entry)
    acl = entry.get("acl")
    if acl is None:
        raise SourceError(sid, "has no 'acl'; every source must say who may see it (e.g. acl: [public])", "acl")
    if isinstance(acl, str):
        acl = [acl]
    if not isinstance(acl, list) or not acl or not all(isinstance(p, str) and p.strip() for p in acl):
        raise SourceError(sid, f"'acl' must be a non-empty list of principals, got {acl!r}", "acl")
    try:
        acl = list(check_principals(p.strip() for p in acl))
    except ValueError as exc:
        raise SourceError(sid, f"'acl': {exc}", "acl") from None
    kind = entry.get("kind")
    if kind not in KINDS:
        raise SourceError(sid, f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}", "kind")
    # Which formats exist, and which take `rules:`, the formats themselves say
    # (lectio.rulesets.registry.format_of, where the source is read).
    fmt = entry.get("format")
    if not isinstance(fmt, str) or not fmt.strip():
        raise SourceError(sid, f"needs a 'format' (the reader of its file, e.g. markdown), got {fmt!r}", "format")
    rules = entry.get("rules") or {}
    if not isinstance(rules, dict) or not all(isinstance(k, str) for k in rules):
        raise SourceError(sid, f"'rules' must be a mapping of rule names to values, got {rules!r}", "rules")
    path, module = entry.get("path"), entry.get("module")
    if not path and not module:
        raise SourceError(sid, "needs a 'path' (relative to the sources file) or a 'module'", "path")
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
        raise SourceError(sid, f"'id' {entry['_bad_id']!r} {_id_problem(entry['_bad_id'])}", "id")
    for key, value in entry.items():
        if isinstance(key, str):
            _refuse(sid, f"{key} (the key)", key, strict=True, field=key)
        for where, text in _strings(value, str(key)):
            _refuse(sid, where, text, strict=key not in FREE_TEXT_KEYS, field=str(key))


def _check_scalars(sid: str, entry: dict[str, Any]) -> None:
    """A title, author, date, … is one value: a list or mapping there fails the entry."""
    for key in SCALAR_KEYS:
        value = entry.get(key)
        if value is not None and not isinstance(value, SCALARS):
            raise SourceError(sid, f"'{key}' must be one value (text, a number or a date), got {_kind_of(value)}", key)


def _kind_of(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "a mapping"
    return f"a value of type {type(value).__name__}"


def _refuse(sid: str, where: str, text: str, strict: bool, field: str) -> None:
    problem = text_problem(text, strict)
    if problem:
        raise SourceError(sid, f"{where!r} {problem}", field)


def _located(entry: dict[str, Any], base_dir: Path, corpus_dir: Path | None) -> Path:
    """The entry's path, symlinks followed; refused outside the sources file's folder and the
    corpus unless the entry says `allow_outside: true`, so a `../` or a link cannot quietly index
    (and serve) a file nobody meant to share."""
    sid, path, allow = entry["id"], entry["path"], entry.get("allow_outside", False)
    if not isinstance(path, str):
        raise SourceError(sid, f"'path' must be a string, got {path!r}", "path")
    if not isinstance(allow, bool):
        raise SourceError(sid, f"'allow_outside' must be true or false, got {allow!r}", "allow_outside")
    resolved = (Path(base_dir) / path).resolve()
    roots = [Path(base_dir).resolve(), Path(corpus_dir or _corpus_dir()).resolve()]
    if allow or any(resolved.is_relative_to(root) for root in roots):
        return resolved
    raise SourceError(sid, f"'path' {path!r} leads to {resolved}, outside the sources file's folder {roots[0]} "
                           f"and the corpus {roots[1]}; add 'allow_outside: true' to the entry if that is meant", "path")


def _corpus_dir() -> Path:
    return load_settings().corpus_dir  # LECTIO_CORPUS_DIR, or the home's corpus, as a run has it


def load_source(sources_file: Path, source_id: str, corpus_dir: Path | None = None) -> Source:
    entry = read_entry(sources_file, source_id)
    if entry is None:
        raise SourceError(source_id, f"is not in {sources_file}")
    return parse_entry(entry, Path(sources_file).resolve().parent, corpus_dir)


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
