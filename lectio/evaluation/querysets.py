"""Labelled query sets for the retrieval metrics: one JSON object per line, validated on load.

A line is ``{"id", "query", "relevant", "expected_top_5", "expected_in_top_10",
"should_not_appear", "must_include_text", "principals", "filters"}``; only ``query`` is
required. References are single verse ids ("rom_8_28"); a range is written out verse by verse
when the set is made, so that recall counts verses and never depends on a range parser.

Validation is strict because a typo in a label silently changes every score built on it:
unknown fields, refs that name no book or chapter, a ref both wanted and unwanted, and
repeated ids are all errors naming the file and the line.
"""

from __future__ import annotations

import hashlib

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from lectio.bible.refs import Ref
from lectio.retrieval import Filters
from lectio.sources import check_principals

REF_FIELDS = ("relevant", "expected_top_5", "expected_in_top_10", "should_not_appear")
TEXT_FIELDS = ("must_include_text", "principals")
FIELDS = ("id", "query", *REF_FIELDS, *TEXT_FIELDS, "filters")
# Every filter search takes; a query set naming another would be scored unfiltered without a word.
FILTERS = tuple(f.name for f in fields(Filters))


@dataclass(frozen=True)
class Query:
    query: str
    id: str
    relevant: tuple[str, ...] = ()
    expected_top_5: tuple[str, ...] = ()
    expected_in_top_10: tuple[str, ...] = ()
    should_not_appear: tuple[str, ...] = ()
    must_include_text: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()
    filters: dict[str, Any] = field(default_factory=dict)

    @property
    def relevant_set(self) -> frozenset[str]:
        """Every ref a result may be credited for: the union of the three wanted lists."""
        return frozenset(self.relevant) | frozenset(self.expected_top_5) | frozenset(
            self.expected_in_top_10
        )


# Share of a set's queries in its dev part (tune on it); the rest is its test part (report it,
# never choose a default by it). Fixed by a hash of each query's id, so neither a person nor a
# reordering of the file decides which query lands where, and a new query does not move others.
DEV_SHARE = 0.6
PARTS = ("dev", "test", "all")


def part_of(query_id: str) -> str:
    """"dev" or "test", fixed by the query's id."""
    bucket = int.from_bytes(hashlib.sha256(query_id.encode("utf-8")).digest()[:4], "big") / 2**32
    return "dev" if bucket < DEV_SHARE else "test"


def select_part(queries: list[Query], part: str) -> list[Query]:
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, not {part!r}")
    return list(queries) if part == "all" else [q for q in queries if part_of(q.id) == part]


def load_queries(path: Path | str) -> list[Query]:
    """Every query of a JSONL file, in file order; blank lines are skipped.

    A query without an id gets "<file stem>-<line number>". Raises ValueError naming the file
    and line for anything malformed.
    """
    path = Path(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                query = _parse(line, default_id=f"{path.stem}-{number}")
            except ValueError as problem:
                raise ValueError(f"{path}:{number}: {problem}") from None
            if query.id in seen:
                raise ValueError(
                    f"{path}:{number}: id {query.id!r} already used on line {seen[query.id]}"
                )
            seen[query.id] = number
            queries.append(query)
    return queries


def _parse(line: str, default_id: str) -> Query:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as problem:
        raise ValueError(f"not valid JSON ({problem.msg}, column {problem.colno})") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}")

    text = record.get("query")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('"query" must be a non-empty string')
    query_id = record.get("id", default_id)
    if not isinstance(query_id, str) or not query_id.strip():
        raise ValueError('"id" must be a non-empty string')
    filters = record.get("filters", {})
    if not isinstance(filters, dict):
        raise ValueError('"filters" must be a JSON object')
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise ValueError(f'"filters": unknown key(s) {", ".join(unknown)}; search filters by {", ".join(FILTERS)}')
    if problem := Filters(**filters).problem():
        raise ValueError(f'"filters": {problem}')

    values: dict[str, tuple[str, ...]] = {}
    for name in (*REF_FIELDS, *TEXT_FIELDS):
        values[name] = _strings(record, name)
    try:
        check_principals(values["principals"])
    except ValueError as exc:
        raise ValueError(f'"principals": {exc}') from None
    for name in REF_FIELDS:
        for ref_id in values[name]:
            try:
                ref = Ref.from_id(ref_id)
            except ValueError as problem:
                raise ValueError(f'"{name}": {problem}') from None
            if ref.id != ref_id:  # "rom_08_28" parses but would never match a result
                raise ValueError(f'"{name}": write {ref_id!r} as {ref.id!r}')

    wanted = set(values["relevant"]) | set(values["expected_top_5"]) | set(
        values["expected_in_top_10"]
    )
    both = sorted(wanted & set(values["should_not_appear"]), key=lambda r: Ref.from_id(r))
    if both:
        raise ValueError(f"{', '.join(both)} both relevant and in should_not_appear")
    return Query(query=text, id=query_id, filters=filters, **values)


def _strings(record: dict, name: str) -> tuple[str, ...]:
    value = record.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f'"{name}" must be a list of non-empty strings')
    repeated = sorted({v for v in value if value.count(v) > 1})
    if repeated:
        raise ValueError(f'"{name}" lists {", ".join(repeated)} more than once')
    return tuple(value)
