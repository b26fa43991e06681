"""The cross-reference graph of an index version: passages the corpus itself links.

Psalm 23 and John 10 are linked by allusion, not by shared words, so a graph finds what
similarity cannot. lectio's graph comes from what its own sources say, never from Nave's:
- a commentary note on one passage that cites another (Scofield's osisRef links, and references
  written in MHCC's and Spurgeon's prose) links the two;
- a patristic or modern text on a passage that cites another does the same.
An edge keeps the ACL of the chunk that made it, so a private note's links stay private.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import psycopg
from psycopg import sql

from lectio.bible.refs import find_references
from lectio.bible.verses import verse_ids

# A note on a whole chapter, or a citation of one, says little about any single verse in it.
MAX_LINKED_VERSES = 12


def table_name(chunk_table: str) -> str:
    return chunk_table.replace("chunks_", "xrefs_", 1)


def cited_verses(text: str, metadata: dict | None) -> set[str]:
    """The verses a chunk cites: its source's cross-reference links and the references written in
    its text, each citation at most MAX_LINKED_VERSES long."""
    cited = set((metadata or {}).get("cross_refs") or ())
    for found in find_references(text):
        if _span(found) <= MAX_LINKED_VERSES:
            cited.update(verse_ids([found], MAX_LINKED_VERSES))
    return cited


def citations_by_chunk(chunks: pd.DataFrame) -> pd.Series:
    """cited_verses of every chunk, in the frame's order; scripture and dictionary entries cite
    nothing. Parsing the references is the costly part of an index build's companion tables, so
    the graph and the citation counts (lectio.index.citations) share one pass."""
    citing = ~chunks["kind"].isin(["scripture", "lexicon"])
    return pd.Series(
        [cited_verses(text, metadata) if cites else set()
         for cites, text, metadata in zip(citing, chunks["text"], chunks["metadata"])],
        index=chunks.index, dtype=object,
    )


def edges(chunks: pd.DataFrame, cited: pd.Series | None = None) -> Counter:
    """(from_ref, to_ref, acl) → how many chunks make the link. `cited` is citations_by_chunk's
    answer for the frame, when the caller has it already."""
    cited = citations_by_chunk(chunks) if cited is None else cited
    found: Counter = Counter()
    linking = ((chunks["kind"] != "scripture") & chunks["refs"].map(lambda r: 0 < len(r) <= MAX_LINKED_VERSES)).to_numpy()
    for refs, metadata, acl, targets in zip(chunks["refs"][linking], chunks["metadata"][linking],
                                             chunks["acl"][linking], cited[linking]):
        if (metadata or {}).get("scope") == "book":
            continue  # a book's introduction surveys the whole book; its citations are no links of one verse
        targets = targets - set(refs)
        acl = tuple(sorted(acl))
        for source in refs:
            for target in targets:
                found[(source, target, acl)] += 1
    return found


def _span(ref_range) -> int:
    start, end = ref_range.start, ref_range.end
    if start.book != end.book or start.chapter != end.chapter:
        return MAX_LINKED_VERSES + 1
    return end.verse - start.verse + 1


def build(conn: psycopg.Connection, chunk_table: str, chunks: pd.DataFrame, cited: pd.Series | None = None) -> int:
    """Create the version's edge table beside its chunk table; tables.protect_version protects both with the
    same row-level rule."""
    table = sql.Identifier(table_name(chunk_table))
    conn.execute(sql.SQL("CREATE TABLE {} (from_ref text NOT NULL, to_ref text NOT NULL, weight int NOT NULL, "
                         "acl text[] NOT NULL)").format(table))
    found = edges(chunks, cited)
    with conn.cursor().copy(sql.SQL("COPY {} (from_ref, to_ref, weight, acl) FROM STDIN").format(table)) as copy:
        for (source, target, acl), weight in found.items():
            copy.write_row((source, target, weight, list(acl)))
    conn.execute(sql.SQL("CREATE INDEX ON {} (from_ref)").format(table))
    conn.execute(sql.SQL("CREATE INDEX ON {} (to_ref)").format(table))
    return len(found)


def linked(conn: psycopg.Connection, chunk_table: str, refs: list[str], depth: int = 2) -> dict[str, tuple[int, int]]:
    """Verses linked to `refs` within `depth` steps, either direction: ref → (depth, weight).
    Runs under the caller's row-level rules, like every read of a version."""
    table = sql.Identifier(table_name(chunk_table))
    found: dict[str, tuple[int, int]] = {}
    frontier, seen = list(dict.fromkeys(refs)), set(refs)
    for step in range(1, depth + 1):
        if not frontier:
            break
        rows = conn.execute(
            sql.SQL("SELECT ref, sum(weight)::int FROM ("
                    " SELECT to_ref AS ref, weight FROM {t} WHERE from_ref = ANY(%(refs)s)"
                    " UNION ALL SELECT from_ref, weight FROM {t} WHERE to_ref = ANY(%(refs)s)) e "
                    "GROUP BY ref").format(t=table),
            {"refs": frontier},
        ).fetchall()
        frontier = [ref for ref, _ in rows if ref not in seen]
        for ref, weight in rows:
            if ref not in seen:
                found[ref] = (step, weight)
        seen.update(frontier)
    return found
