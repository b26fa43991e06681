"""Searching an index version: references, word studies and ranked retrieval fused from several
retrievers, all read as the caller under row-level security.

What callers outside this package use is named here, and they import it from here alone: a search
(`search`, `SearchRequest`, its `SearchResponse` of `Result`s), what shapes it (`Filters`, `Mode`,
`SearchConfig`, `SearchOptions` and their help), the query as a search reads it (`read_query`),
and the range a numeric setting must keep (`setting_problem`). Each is loaded on first use, so a
command that only parses its options never loads a model."""

from __future__ import annotations

from importlib import import_module

# Each public name and the module that holds it.
_PUBLIC = {
    "search": "door", "SearchRequest": "door", "SearchResponse": "response", "Result": "response",
    "DEFAULT_PRINCIPALS": "door", "MAX_QUERY_CHARS": "door", "DEFAULT_TRANSLATION": "request",
    "Filters": "filters", "FILTER_HELP": "filters", "SearchOptions": "options", "OPTION_HELP": "options",
    "Mode": "modes", "MODES": "modes", "SearchConfig": "config",
    "read_query": ("query_text", "read"), "setting_problem": ("bounds", "problem"),
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = where if isinstance(where, tuple) else (where, name)
    value = getattr(import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value  # found once
    return value
