"""A version's tables: the layout of its chunk table, the names of its companions, and the
row-level security that covers them.

A version's chunk table is `chunks_vN`; every companion (lexicon, postings, cross-references,
citations) is `<what>_vN`, so the catalog alone tells which tables a version owns.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from lectio.index import citations, postings, security, xrefs

# Bump when the layout of index tables changes, so an old table is never reused as a new one.
# 4: metadata stored as a JSON object (it was JSON text), and the cross-reference graph table.
# 5: BM25 document frequencies from public chunks only.
# 6: how often the corpus cites each verse (lectio.index.citations).
# 7: BM25 postings (lectio.index.postings), pericope title words stored with the chunk, and the
#    indexes of lectio.index.indexes.
# 8: postings' impacts from the public chunks' mean length (lectio.index.postings.statistics).
INDEX_LAYOUT = 8

# (column, PostgreSQL type) of a chunk table in COPY order; embedding and tsv are filled in SQL.
CHUNK_COLUMNS = [
    ("chunk_id", "text"),
    ("source_id", "text"),
    ("kind", "text"),
    ("granularity", "text"),
    ("parent_id", "text"),
    ("text", "text"),
    ("header", "text"),
    ("breadcrumb", "text"),
    ("tokens", "int4"),
    ("acl", "text[]"),
    ("ruleset", "text"),
    ("content_hash", "text"),
    ("refs", "text[]"),
    ("ordinal", "int8"),
    ("translation", "text"),
    ("book", "text"),
    ("chapter", "int4"),
    ("verse", "int4"),
    ("testament", "text"),
    ("genre", "text"),
    ("title", "text"),
    ("metadata", "jsonb"),
]


def lexicon_table(chunk_table: str) -> str:
    return chunk_table.replace("chunks_", "lexicon_", 1)


def has_postings(layout: int | None) -> bool:
    """Whether a version of index layout `layout` (None: built before versions recorded it) has
    BM25 postings and its pericopes' title words stored: 7 on."""
    return (layout or 0) >= 7


def title_words(layout: int | None) -> sql.SQL:
    """A chunk's title words as SQL: stored (and indexed) from layout 7 on, read from the title
    before."""
    return sql.SQL("title_words" if has_postings(layout) else "tsvector_to_array(to_tsvector('english', title))")


def table_exists(conn: psycopg.Connection, table: str) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]


def version_tables(conn: psycopg.Connection, table: str) -> list[str]:
    """Every table and view of the version whose chunk table is `table`, read from the catalog:
    each is named `<what>_vN`, so a table added to a version later is revoked and dropped with
    it without anyone remembering to list it."""
    suffix = table.removeprefix("chunks_")
    return [name for (name,) in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
        "AND c.relname ~ ('^.+_' || %s || '$') ORDER BY c.relname",
        (suffix,)).fetchall()]


def protect_version(conn: psycopg.Connection, table: str) -> None:
    """Row-level security on a version's chunks and its cross-reference edges (lectio.index.security).
    The BM25 word statistics and the citation counts come from public chunks only and are readable."""
    protected = [table] + [t for t in (xrefs.table_name(table), postings.table_name(table)) if table_exists(conn, t)]
    readable = [t for t in (lexicon_table(table), citations.table_name(table)) if table_exists(conn, t)]
    security.protect(conn, protected, readable)
