"""BM25 postings of an index version: for every word, the chunks that hold it, in the order of
how much the word counts in each (its impact).

Scoring BM25 from the chunks' full-text index means reading every chunk that holds any query
word: "God" alone is in 37,000 of 133,000 chunks, and a search spent most of its time there. A
word's impact in a chunk (its BM25 term-frequency part: how often the word occurs, against the
chunk's length) does not depend on the query, so it is computed once with the version. A search
then reads the few thousand best postings of each query word, sums them, and scores the best of
those chunks exactly as before. A chunk can be missed only where common words are concerned: a
word rarer than the depth read is read whole, so a chunk is lost only when its postings of the
common words fall below their best and what the rarer words give it leaves it outside the
chunks scored in full.

Postings carry the chunk's ACL and the columns of the default filters (kind, translation), so
row-level security and the usual filters apply while reading them, not after.

BM25's corpus statistics (how many chunks, their mean length, each word's document frequency)
are counted over public chunks only, for every caller: a private chunk added to a version must
not move anyone else's scores or ranking, and a score must not tell how much private text there
is. Private chunks are scored with the same statistics; a word no public chunk holds counts as
in one chunk.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from lectio.index import bm25

# What a posting carries to be filtered without reading its chunk.
FILTER_COLUMNS = ("acl", "kind", "translation")
# The rows BM25's statistics are counted over (see above).
PUBLIC_ROWS = "acl @> ARRAY['public']"
# A word's impact in a chunk: its BM25 term-frequency part at BM25's usual constants (a search
# may score with others, which then only order the postings read slightly differently).
_IMPACT = sql.SQL(str(bm25.saturation(
    bm25.Sql("u.tf"), bm25.length_norm(bm25.Sql("length(c.tsv)"), bm25.Sql("s.avgdl"), bm25.K1, bm25.B), bm25.K1)))


def statistics(chunk_table: str) -> sql.Composable:
    """A query of one row: BM25's number of documents (`docs`) and their mean length in words
    (`avgdl`), over the table's public chunks. At least 1 each, so a version with no public chunk
    (or none with a word) still scores: no document frequency exceeds 1 then, and every weight
    stays positive."""
    return sql.SQL("SELECT greatest(count(*), 1)::int4 AS docs, coalesce(nullif(avg(length(tsv)), 0), 1)::float8 "
                   "AS avgdl FROM {} WHERE {}").format(sql.Identifier(chunk_table), sql.SQL(PUBLIC_ROWS))


def table_name(chunk_table: str) -> str:
    return chunk_table.replace("chunks_", "postings_", 1)


def build(conn: psycopg.Connection, chunk_table: str) -> None:
    """Create the version's postings beside its chunk table, stored in word order so that one
    word's best postings lie together on disk."""
    table = sql.Identifier(table_name(chunk_table))
    conn.execute("SET LOCAL work_mem = '256MB'")
    conn.execute(
        sql.SQL(
            """
            CREATE TABLE {postings} AS
            SELECT u.lexeme AS term, ({impact})::real AS impact, c.chunk_id, {columns}
            FROM {chunks} c
            CROSS JOIN ({statistics}) s
            CROSS JOIN LATERAL (SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf FROM unnest(c.tsv)) u
            ORDER BY 1, 2 DESC
            """
        ).format(postings=table, chunks=sql.Identifier(chunk_table), statistics=statistics(chunk_table),
                 impact=_IMPACT, columns=sql.SQL(", ").join(sql.Identifier("c", column) for column in FILTER_COLUMNS))
    )
    conn.execute(sql.SQL("CREATE INDEX ON {} (term, impact DESC)").format(table))
    conn.execute(sql.SQL("ANALYZE {}").format(table))
