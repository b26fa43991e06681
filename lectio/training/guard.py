"""What may never train a model: the texts that evaluate lectio, and the sources that would teach
a model the answers its evaluation asks for.

- Every query of the committed query sets (data/queries: theology, Nave's, quotations, long
  passages, dev and test parts alike): a query text never becomes a training query.
- The commentary entries the long-passage set is cut from: that set's queries are runs of Henry's
  sentences, so an entry holding any run of SHINGLE words of one of them is refused whole.
- Nave's Topical Bible (evaluation only) and the Westminster Standards (their proof texts are a
  modern edition's judgments, neither an input nor a set to tune on): refused by the entry that
  brings them (module or format), whatever id or kind the sources file gives it.
- Anything not every caller may read (an ACL without `public`): a trained model serves every caller,
  so it must learn nothing a caller could not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lectio.evaluation.querysets import load_queries

QUERY_SETS = Path(__file__).resolve().parents[2] / "data" / "queries"
# Words in a run shared with an evaluation query that makes a text that query's source. Eight
# words of running prose are too many to share by chance and few enough that an entry quoting a
# line of it is caught.
SHINGLE = 8
# Entries that bring evaluation-only data, by what they read rather than by their chosen id.
EVALUATION_MODULES = frozenset({"naves"})
EVALUATION_FORMATS = frozenset({"westminster-json"})
_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _shingles(text: str) -> set[tuple[str, ...]]:
    found = words(text)
    return {tuple(found[i:i + SHINGLE]) for i in range(max(0, len(found) - SHINGLE + 1))}


@dataclass(frozen=True)
class Guard:
    queries: frozenset[str]  # every evaluation query, its words joined by one space
    shingles: frozenset[tuple[str, ...]]  # the runs of words of the queries cut from the corpus
    excluded_sources: frozenset[str] = frozenset()

    @classmethod
    def of_query_sets(cls, paths: Iterable[Path] | None = None, excluded_sources: Iterable[str] = ()) -> Guard:
        """The guard over the committed query sets (every JSONL file under data/queries) or `paths`."""
        queries = [q.query for path in sorted(paths or QUERY_SETS.glob("*.jsonl")) for q in load_queries(path)]
        return cls(frozenset(" ".join(words(q)) for q in queries),
                   frozenset(s for q in queries for s in _shingles(q)), frozenset(excluded_sources))

    def admits_source(self, source_id: str, acl: Iterable[str]) -> bool:
        return source_id not in self.excluded_sources and "public" in set(acl)

    def admits_text(self, text: str) -> bool:
        """Neither an evaluation query itself nor holding a run of one's words."""
        return " ".join(words(text)) not in self.queries and self.shingles.isdisjoint(_shingles(text))


def evaluation_sources(entries: dict) -> frozenset[str]:
    """The ids of the sources file's entries (load_sources) that bring evaluation-only data, and
    of those that cannot be read now: what such an entry brought is not known, and an index may
    still carry its last good chunks."""
    return frozenset(sid for sid, s in entries.items() if not hasattr(s, "format") or s.format in EVALUATION_FORMATS
                     or (s.module or "").lower() in EVALUATION_MODULES)
