"""The shared schema (the version registry's tables, the embedding cache, the reader role and its
grants) and its migration, run once per SCHEMA_VERSION rather than on every connection."""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from lectio.embedding.cache import CACHE_SCHEMA
from lectio.index import locks, postings, security, tables

_SCHEMA = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE SEQUENCE IF NOT EXISTS index_version_seq;
CREATE TABLE IF NOT EXISTS index_versions (
    version text PRIMARY KEY,
    table_name text NOT NULL,
    ruleset text NOT NULL,
    model_id text NOT NULL,
    fingerprint text NOT NULL,
    sources jsonb NOT NULL,
    rows integer,
    status text NOT NULL,
    metrics jsonb NOT NULL DEFAULT '{}',
    build_seconds double precision,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Columns added after the first release: homes created before them get them here.
ALTER TABLE index_versions ADD COLUMN IF NOT EXISTS avg_doc_lexemes double precision;
-- Per source, every principal its chunks are visible to: what a version exposes, so a version
-- can be compared with the sources file as it stands without reading its table.
ALTER TABLE index_versions ADD COLUMN IF NOT EXISTS source_acls jsonb;
ALTER TABLE index_versions ADD COLUMN IF NOT EXISTS revoked_reason text;
-- The INDEX_LAYOUT a version was built with: searches use what its tables hold (NULL: before 7).
ALTER TABLE index_versions ADD COLUMN IF NOT EXISTS layout integer;
-- BM25's number of documents, public chunks only (lectio.index.postings.statistics), as
-- avg_doc_lexemes is their mean length.
ALTER TABLE index_versions ADD COLUMN IF NOT EXISTS bm25_docs integer;
-- The trained models its searches read where a setting says "active", by that setting's path
-- ({"stages.learned_rank.model": "trees-…"}): the gate writes them on the live version, and a
-- version built later starts from the live version's, so the migration gate compares each
-- version as it would be searched, and a rollback searches as it did.
ALTER TABLE index_versions ADD COLUMN IF NOT EXISTS rankers jsonb NOT NULL DEFAULT '{}';
-- The last version number given. A row updated in the build's own transaction rather than the
-- sequence: PostgreSQL logs a sequence 32 values ahead, so after a crash the next version was v34
-- where v3 was due. Homes from before it go on from the sequence's value (no number is reused).
CREATE TABLE IF NOT EXISTS index_version_counter (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    last integer NOT NULL
);
INSERT INTO index_version_counter (last)
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM index_version_seq
    ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS live_index (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version text NOT NULL REFERENCES index_versions (version),
    previous text REFERENCES index_versions (version),
    switched_at timestamptz NOT NULL DEFAULT now()
);
"""

# Bump when the shared schema changes (tables, functions, policies on existing versions);
# ensure_schema then migrates once and every later call costs one read.
# 2: principals reach row-level security as a signed token (lectio.index.security); existing
#    version tables get the new policy. 'revoked' versions.
# 3: the policy in a form the planner plans around (lectio.index.security._POLICY).
# 4: index_versions.layout, and versions' postings tables protected.
# 5: definer functions pin search_path with pg_temp last; PUBLIC loses TEMP, CREATE, large
#    objects and Dagster's database; the reader no longer sees index_versions.rows.
# 6: reader sessions report no query text, and PUBLIC loses other sessions' activity.
# 7: BM25's N and mean length over public chunks only (index_versions.bm25_docs); existing
#    versions' are counted again.
# 8: version numbers from index_version_counter.
# 9: index_versions.rankers, the trained models a version's searches read (the reader sees it).
SCHEMA_VERSION = 9


def ensure_schema(conn: psycopg.Connection) -> None:
    """Create or migrate the shared schema when its version is behind; otherwise only a read.
    DDL takes locks that queue behind open searches, so it must not run on every call."""
    if _schema_version(conn) < SCHEMA_VERSION:
        with conn.transaction():
            locks.lock_schema(conn)
            if _schema_version(conn) < SCHEMA_VERSION:
                _migrate_schema(conn)
    register_vector(conn)


def _schema_version(conn: psycopg.Connection) -> int:
    if conn.execute("SELECT to_regclass('lectio_schema')").fetchone()[0] is None:
        return 0
    row = conn.execute("SELECT version FROM lectio_schema").fetchone()
    return row[0] if row else 0


def _migrate_schema(conn: psycopg.Connection) -> None:
    conn.execute(_SCHEMA)
    conn.execute(CACHE_SCHEMA)
    conn.execute(security.SCHEMA)
    security.create_reader_role(conn)
    reader = sql.Identifier(security.READER_ROLE)
    # The reader needs a version's table and its BM25 statistics, not which sources it holds,
    # how many rows (private ones included) or how they score: those columns stay the owner's.
    conn.execute(sql.SQL("REVOKE ALL ON index_versions FROM {}").format(reader))
    conn.execute(sql.SQL("GRANT SELECT (version, table_name, status, avg_doc_lexemes, bm25_docs, layout, rankers) "
                         "ON index_versions TO {}").format(reader))
    conn.execute(sql.SQL("GRANT SELECT ON live_index TO {}").format(reader))
    # Versions built under an older policy get the current one.
    for (table,) in conn.execute(
        "SELECT table_name FROM index_versions WHERE status = 'ready' AND to_regclass(table_name) IS NOT NULL"
    ).fetchall():
        tables.protect_version(conn, table)
    _public_statistics(conn)
    conn.execute("CREATE TABLE IF NOT EXISTS lectio_schema (version integer NOT NULL)")
    conn.execute("DELETE FROM lectio_schema")
    conn.execute("INSERT INTO lectio_schema (version) VALUES (%s)", (SCHEMA_VERSION,))


def _public_statistics(conn: psycopg.Connection) -> None:
    """BM25's N and mean length of versions built when they counted private chunks too, counted
    again over public ones. Their postings keep the order of the old mean length until rebuilt
    (INDEX_LAYOUT 8); the scores they rank are the new ones."""
    for version, table in conn.execute(
        "SELECT version, table_name FROM index_versions WHERE bm25_docs IS NULL AND to_regclass(table_name) IS NOT NULL"
    ).fetchall():
        conn.execute(sql.SQL("UPDATE index_versions SET (bm25_docs, avg_doc_lexemes) = ({}) WHERE version = %s")
                     .format(postings.statistics(table)), (version,))
