"""The indexes of a version's chunk table: HNSW for the vector ranking, and one for each search
that would otherwise read every chunk."""

from __future__ import annotations

import psycopg
from psycopg import sql

HNSW_M = 32
HNSW_EF_CONSTRUCTION = 128

# The secondary indexes.
_INDEXES = (
    "USING gin (tsv)", "USING gin (refs)", "USING gin (acl)", "(ordinal)",
    # Pericopes by the words of their titles (the title match of lectio.retrieval.lexical).
    "USING gin (title_words) WHERE granularity = 'pericope'",
    # Verses by the Strong's numbers of their words (word studies, lectio.retrieval.word_study).
    "USING gin ((metadata -> 'strongs'))",
    # Rows by kind: a short query is first tried as a word study, and that look-up read every
    # chunk (270 ms on the full corpus) before it found no dictionary entry. An index on the
    # entries' spellings would go unused: under row-level security PostgreSQL applies a JSON
    # field test only after the policy, never as an index condition.
    "(kind)",
)


def create(conn: psycopg.Connection, table: str) -> None:
    ident = sql.Identifier(table)
    # At least 512 MB for the HNSW graph; a server, database or role set higher keeps its own: a
    # graph that outgrows it is built on disk, several times slower (docs/scale.md).
    conn.execute("SELECT set_config('maintenance_work_mem', greatest(setting::bigint, %s)::text, true) "
                 "FROM pg_settings WHERE name = 'maintenance_work_mem'", (512 * 1024,))
    conn.execute(
        sql.SQL(
            "CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef})"
        ).format(table=ident, m=sql.Literal(HNSW_M), ef=sql.Literal(HNSW_EF_CONSTRUCTION))
    )
    for index in _INDEXES:
        conn.execute(sql.SQL("CREATE INDEX ON {} " + index).format(ident))
