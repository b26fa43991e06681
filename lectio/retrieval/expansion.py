"""Theology query expansion: the words the texts use for the idea a query names.

"grace" in a question should also reach passages that say "mercy" or "loving kindness", and "the
Lord" should reach the WEB's "Yahweh". The vocabulary lives in data/vocabulary/query_expansion.yaml;
search adds its expansions beside the query's own words, at a lower weight.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from lectio.settings import PROJECT_ROOT

VOCABULARY = PROJECT_ROOT / "data" / "vocabulary" / "query_expansion.yaml"

# A key matches a whole word or phrase, also with a plural, verb or possessive ending.
_ENDINGS = r"(?:s|es|ed|ing|'s|’s)?"


def _inflected(word: str) -> str:
    """A pattern for a key's last word with its endings: worry/worries/worried, forgive/forgiving."""
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return re.escape(word[:-1]) + r"(?:y|ies|ied|ying|y's|y’s)"
    if word.endswith("ie"):
        return re.escape(word[:-2]) + r"(?:ie|ies|ied|ying)"
    if word.endswith("e"):
        return re.escape(word[:-1]) + r"(?:e|es|ed|ing|e's|e’s)"
    return re.escape(word) + _ENDINGS


@lru_cache(maxsize=4)
def load_vocabulary(path: Path = VOCABULARY) -> dict[str, tuple[str, ...]]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    entries = data.get("expansions")
    if not isinstance(entries, dict):
        raise ValueError(f"{path}: expected a mapping under 'expansions'")
    vocabulary = {}
    for key, terms in entries.items():
        if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
            raise ValueError(f"{path}: expansions of {key!r} must be a list of strings")
        vocabulary[str(key).lower()] = tuple(terms)
    return vocabulary


@lru_cache(maxsize=4)
def _patterns(path: Path) -> list[tuple[re.Pattern, tuple[str, ...]]]:
    # Longest keys first, so "holy spirit" is seen before "spirit".
    keys = sorted(load_vocabulary(path), key=len, reverse=True)
    return [
        (re.compile(r"(?<![\w'])" + r"\s+".join([*map(re.escape, key.split()[:-1]), _inflected(key.split()[-1])])
                    + r"(?!\w)", re.IGNORECASE),
         load_vocabulary(path)[key])
        for key in keys
    ]


def expansions(query: str, path: Path = VOCABULARY) -> list[str]:
    """Terms to add for `query`, longest matching key first, without the words the query holds."""
    present = {w.lower() for w in re.findall(r"[\w’']+", query)}
    found: list[str] = []
    for pattern, terms in _patterns(path):
        if pattern.search(query):
            for term in terms:
                if term.lower() not in present and term not in found:
                    found.append(term)
    return found
