"""PostgreSQL storage: index versions (one table each) and the live pointer.

An index version is built completely in its own table before anything points at it; switching
the live version is a single-row update in one transaction, so a reader never sees a half-built
index and a failed build leaves the live one as it was.
"""

from __future__ import annotations

import hashlib
import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import pandas as pd
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from lectio.index import citations
from lectio.index import indexes, postings, security, xrefs
from lectio.embedding.cache import CACHE_SCHEMA
from lectio.embedding.model import DIMENSIONS

# Bump when the layout of index tables changes, so an old table is never reused as a new one.
# 4: metadata stored as a JSON object (it was JSON text), and the cross-reference graph table.
# 5: BM25 document frequencies from public chunks only.
# 6: how often the corpus cites each verse (lectio.index.citations).
# 7: BM25 postings (lectio.index.postings), pericope title words stored with the chunk, and the
#    indexes of lectio.index.indexes.
INDEX_LAYOUT = 7

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
CREATE TABLE IF NOT EXISTS live_index (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version text NOT NULL REFERENCES index_versions (version),
    previous text REFERENCES index_versions (version),
    switched_at timestamptz NOT NULL DEFAULT now()
);
"""

# (column, PostgreSQL type, DataFrame column) in COPY order; embedding and tsv are filled in SQL.
_CHUNK_COLUMNS = [
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


# Bump when the shared schema changes (tables, functions, policies on existing versions);
# ensure_schema then migrates once and every later call costs one read.
# 2: principals reach row-level security as a signed token (lectio.index.security); existing
#    version tables get the new policy. 'revoked' versions.
# 3: the policy in a form the planner plans around (lectio.index.security._POLICY).
# 4: index_versions.layout, and versions' postings tables protected.
# 5: definer functions pin search_path with pg_temp last; PUBLIC loses TEMP, CREATE, large
#    objects and Dagster's database; the reader no longer sees index_versions.rows.
SCHEMA_VERSION = 5


def ensure_schema(conn: psycopg.Connection) -> None:
    """Create or migrate the shared schema when its version is behind; otherwise only a read.
    DDL takes locks that queue behind open searches, so it must not run on every call."""
    if _schema_version(conn) < SCHEMA_VERSION:
        with conn.transaction():
            # Several processes may start at once; CREATE EXTENSION IF NOT EXISTS is not race-free.
            conn.execute("SELECT pg_advisory_xact_lock(4242)")
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
    conn.execute(sql.SQL("GRANT SELECT (version, table_name, status, avg_doc_lexemes, layout) ON index_versions TO {}")
                 .format(reader))
    conn.execute(sql.SQL("GRANT SELECT ON live_index TO {}").format(reader))
    # Versions built under an older policy get the current one.
    for (table,) in conn.execute(
        "SELECT table_name FROM index_versions WHERE status = 'ready' AND to_regclass(table_name) IS NOT NULL"
    ).fetchall():
        protect_version(conn, table)
    conn.execute("CREATE TABLE IF NOT EXISTS lectio_schema (version integer NOT NULL)")
    conn.execute("DELETE FROM lectio_schema")
    conn.execute("INSERT INTO lectio_schema (version) VALUES (%s)", (SCHEMA_VERSION,))


# ---------------------------------------------------------------- index versions


@dataclass(frozen=True)
class IndexVersion:
    version: str
    table_name: str
    ruleset: str
    model_id: str
    fingerprint: str
    sources: list[str]
    rows: int | None
    status: str
    metrics: dict[str, Any]
    live: bool
    revoked_reason: str | None = None
    layout: int | None = None  # INDEX_LAYOUT it was built with; None before 7
    avg_doc_lexemes: float | None = None  # BM25's mean document length


def source_fingerprints(chunks: pd.DataFrame) -> dict[str, str]:
    """Per source, the identity of its chunks (ids, texts, ACLs): what one run made, so the index
    can tell that the chunks it is about to load are still those."""
    return {str(sid): fingerprint(frame, "") for sid, frame in chunks.groupby("source_id", sort=True)}


def fingerprint(chunks: pd.DataFrame, model_id: str) -> str:
    """Identity of an index's content: same chunks, same model, same layout → same index."""
    digest = hashlib.sha256(f"{INDEX_LAYOUT}|{model_id}".encode())
    ordered = chunks.sort_values("chunk_id")
    for row in ordered[["chunk_id", "content_hash", "acl", "ruleset", "parent_id"]].itertuples(index=False):
        digest.update(json.dumps(list(row), default=list).encode())
    return digest.hexdigest()


def list_versions(conn: psycopg.Connection) -> list[IndexVersion]:
    live = live_version(conn)
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} FROM index_versions ORDER BY created_at, version"
    ).fetchall()
    return [_version(row, live) for row in rows]


_VERSION_COLUMNS = ("version, table_name, ruleset, model_id, fingerprint, sources, rows, status, metrics, "
                    "revoked_reason, layout, avg_doc_lexemes")


def _version(row: tuple, live: str | None) -> IndexVersion:
    return IndexVersion(*row[:9], live=(row[0] == live), revoked_reason=row[9], layout=row[10], avg_doc_lexemes=row[11])


def get_version(conn: psycopg.Connection, version: str | None = None) -> IndexVersion | None:
    """A version's record (the live one when `version` is None), in one read: searches ask this
    first, so it must cost one round trip."""
    row = conn.execute(
        f"SELECT {_VERSION_COLUMNS}, (SELECT version FROM live_index) FROM index_versions "
        "WHERE version = coalesce(%s, (SELECT version FROM live_index))",
        (version,),
    ).fetchone()
    return _version(row[:-1], row[-1]) if row else None


def live_version(conn: psycopg.Connection) -> str | None:
    row = conn.execute("SELECT version FROM live_index").fetchone()
    return row[0] if row else None


def find_ready_version(conn: psycopg.Connection, fp: str) -> str | None:
    row = conn.execute(
        "SELECT version FROM index_versions WHERE fingerprint = %s AND status = 'ready' "
        "ORDER BY created_at DESC LIMIT 1",
        (fp,),
    ).fetchone()
    return row[0] if row else None


def switch_live(conn: psycopg.Connection, version: str) -> None:
    with conn.transaction():
        status = conn.execute("SELECT status FROM index_versions WHERE version = %s", (version,)).fetchone()
        if status is None:
            raise ValueError(f"no index version {version!r}")
        if status[0] == "revoked":
            raise ValueError(f"index version {version!r} is revoked and is never served: {revoked_reason(conn, version)}")
        if status[0] != "ready":
            raise ValueError(f"index version {version!r} is {status[0]}, not ready")
        conn.execute(
            "INSERT INTO live_index (version) VALUES (%s) ON CONFLICT (singleton) DO UPDATE "
            "SET previous = live_index.version, version = EXCLUDED.version, switched_at = now() "
            "WHERE live_index.version IS DISTINCT FROM EXCLUDED.version",
            (version,),
        )


# First key of the advisory lock a build holds on its version number (the second key).
_BUILD_LOCK = 4243
# Key of the advisory lock one writer (a run, a migration, a switch, a prune) holds throughout.
_WRITER_LOCK = 4244


class WriterBusy(RuntimeError):
    pass


@contextmanager
def writer_lock(conn: psycopg.Connection, what: str = "this change") -> Iterator[None]:
    """One writer per database at a time, held on a connection of its own for the writer's whole
    life: two runs at once would overwrite each other's stored outputs, and two migrations would
    each be gated against the same live index. A second writer is refused at once (it names what
    it was); a killed writer's lock ends with its session."""
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (_WRITER_LOCK,)).fetchone()[0]:
        raise WriterBusy(f"another lectio run, migration or index change is writing to this database; "
                         f"{what} was not started: try again when it has finished")
    try:
        yield
    finally:
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_WRITER_LOCK,))
        except psycopg.Error:
            pass  # a broken connection: the session, and with it the lock, is gone anyway


def previous_version(conn: psycopg.Connection) -> str | None:
    """The rollback target: what was live before the last switch."""
    row = conn.execute("SELECT previous FROM live_index").fetchone()
    return row[0] if row else None


def merge_metrics(conn: psycopg.Connection, version: str, metrics: dict[str, Any]) -> None:
    """Add or replace top-level keys of a version's metrics (evaluations, gate decisions)."""
    updated = conn.execute(
        "UPDATE index_versions SET metrics = metrics || %s::jsonb WHERE version = %s",
        (json.dumps(metrics, default=str), version),
    ).rowcount
    if not updated:
        raise ValueError(f"no index version {version!r}")


def mark_abandoned_builds(conn: psycopg.Connection) -> list[str]:
    """Mark 'building' versions whose builder is gone (killed mid-build) as 'abandoned'.

    Their tables were never committed, so there is nothing to clean up but the record; a
    build still running holds its advisory lock and is left alone. Call it on a connection that
    is not building: advisory locks are re-entrant within one session."""
    abandoned = []
    for version, number in conn.execute(
        "SELECT version, substr(version, 2)::bigint FROM index_versions WHERE status = 'building'"
    ).fetchall():
        if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_BUILD_LOCK, number)).fetchone()[0]:
            try:
                conn.execute(
                    "UPDATE index_versions SET status = 'abandoned' WHERE version = %s AND status = 'building'",
                    (version,),
                )
                abandoned.append(version)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_BUILD_LOCK, number))
    return abandoned


def drop_version(conn: psycopg.Connection, version: str) -> None:
    """Drop a version's chunk and lexicon tables and its record, in one transaction.

    The live version and the rollback target are refused; the live pointer is locked for the
    transaction so neither can become one of them meanwhile."""
    with conn.transaction():
        pointer = conn.execute("SELECT version, previous FROM live_index FOR UPDATE").fetchone()
        row = conn.execute(
            "SELECT table_name, status FROM index_versions WHERE version = %s FOR UPDATE", (version,)
        ).fetchone()
        if row is None:
            raise ValueError(f"no index version {version!r}")
        table, status = row
        if pointer and version == pointer[0]:
            raise ValueError(f"index version {version!r} is live; it cannot be dropped")
        if pointer and version == pointer[1]:
            if status != "revoked":
                raise ValueError(f"index version {version!r} is the rollback target; it cannot be dropped")
            conn.execute("UPDATE live_index SET previous = NULL")  # nothing to roll back to now
        if status == "building":
            raise ValueError(f"index version {version!r} is still being built")
        for owned in version_tables(conn, table):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(owned)))
        conn.execute("DELETE FROM index_versions WHERE version = %s", (version,))


def revoked_reason(conn: psycopg.Connection, version: str) -> str:
    row = conn.execute("SELECT revoked_reason FROM index_versions WHERE version = %s", (version,)).fetchone()
    return (row[0] if row else None) or "revoked"


def version_chunks(conn: psycopg.Connection, version: str) -> pd.DataFrame:
    """A version's chunks as a frame of the chunk columns (no embeddings), read as the owner,
    past row-level security: for checks over a whole version (migrations), never to answer a
    caller."""
    info = get_version(conn, version)
    if info is None or info.status != "ready":
        raise ValueError(f"index version {version!r} is not ready")
    names = [name for name, _ in _CHUNK_COLUMNS]
    rows = conn.execute(
        sql.SQL("SELECT {} FROM {} ORDER BY chunk_id").format(
            sql.SQL(", ").join(map(sql.Identifier, names)), sql.Identifier(info.table_name))
    ).fetchall()
    frame = pd.DataFrame(rows, columns=names)
    # Tables of layout 3 hold metadata as JSON text inside a jsonb string.
    frame["metadata"] = frame["metadata"].map(lambda m: json.loads(m) if isinstance(m, str) else m)
    return frame


def build_version(conn: psycopg.Connection, chunks: pd.DataFrame, model_id: str, fp: str) -> IndexVersion:
    """Load chunks (whose embeddings are all cached) into a new version table and index it."""
    started = time.monotonic()
    number = conn.execute("SELECT nextval('index_version_seq')").fetchone()[0]
    version, table = f"v{number}", f"chunks_v{number}"
    # Held while the version is 'building', and released by PostgreSQL when this session ends
    # however it ends: a 'building' record whose lock is free belongs to a dead build.
    conn.execute("SELECT pg_advisory_lock(%s, %s)", (_BUILD_LOCK, number))
    rulesets = ",".join(sorted(chunks["ruleset"].unique()))
    sources = sorted(chunks["source_id"].unique())
    conn.execute(
        "INSERT INTO index_versions (version, table_name, ruleset, model_id, fingerprint, sources, source_acls, status) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, 'building')",
        (version, table, rulesets, model_id, fp, json.dumps(sources), Jsonb(_source_acls(chunks))),
    )
    try:
        with conn.transaction():
            rows = _load_table(conn, table, chunks, model_id)
            conn.execute(
                sql.SQL(
                    "UPDATE index_versions SET status = 'ready', rows = %s, build_seconds = %s, layout = %s, "
                    "avg_doc_lexemes = (SELECT avg(length(tsv)) FROM {}) WHERE version = %s"
                ).format(sql.Identifier(table)),
                (rows, time.monotonic() - started, INDEX_LAYOUT, version),
            )
    except BaseException:
        # The table was created in the rolled-back transaction; only the record remains.
        conn.execute("UPDATE index_versions SET status = 'failed' WHERE version = %s", (version,))
        raise
    finally:
        try:
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_BUILD_LOCK, number))
        except psycopg.Error:
            pass  # a broken connection: the session, and with it the lock, is gone anyway
    return get_version(conn, version)


def _load_table(conn: psycopg.Connection, table: str, chunks: pd.DataFrame, model_id: str) -> int:
    ident = sql.Identifier(table)
    column_defs = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(pg_type)) for name, pg_type in _CHUNK_COLUMNS
    )
    names = sql.SQL(", ").join(sql.Identifier(name) for name, _ in _CHUNK_COLUMNS)
    conn.execute(sql.SQL("CREATE TEMP TABLE staging ({}) ON COMMIT DROP").format(column_defs))
    with conn.cursor().copy(sql.SQL("COPY staging ({}) FROM STDIN (FORMAT BINARY)").format(names)) as copy:
        copy.set_types([pg_type for _, pg_type in _CHUNK_COLUMNS])
        for row in _copy_rows(chunks):
            copy.write_row(row)
    conn.execute(
        sql.SQL(
            """CREATE TABLE {table} ({columns},
                embedding vector({dims}) NOT NULL,
                tsv tsvector GENERATED ALWAYS AS
                    (to_tsvector('english', coalesce(title, '') || ' ' || text)) STORED,
                title_words text[] GENERATED ALWAYS AS
                    (tsvector_to_array(to_tsvector('english', coalesce(title, '')))) STORED,
                PRIMARY KEY (chunk_id))"""
        ).format(table=ident, columns=column_defs, dims=sql.Literal(DIMENSIONS))
    )
    inserted = conn.execute(
        sql.SQL(
            "INSERT INTO {table} ({names}, embedding) SELECT {s_names}, c.embedding "
            "FROM staging s JOIN embedding_cache c ON c.content_hash = s.content_hash AND c.model_id = %s"
        ).format(
            table=ident,
            names=names,
            s_names=sql.SQL(", ").join(sql.Identifier("s", name) for name, _ in _CHUNK_COLUMNS),
        ),
        (model_id,),
    ).rowcount
    if inserted != len(chunks):
        # Nothing is dropped silently: a chunk without an embedding fails the build.
        raise RuntimeError(f"{len(chunks) - inserted} of {len(chunks)} chunks have no cached embedding")
    indexes.create(conn, table)
    # Document frequencies for BM25: ts_rank alone knows nothing of how rare a word is. Counted
    # over public chunks only: the reader may read this table, and a word that only a private
    # note holds must not show there (search treats a word missing here as rare).
    lexicon = sql.Identifier(lexicon_table(table))
    conn.execute(
        sql.SQL("CREATE TABLE {lexicon} AS SELECT word, ndoc FROM ts_stat({q})").format(
            lexicon=lexicon, q=sql.Literal(f"SELECT tsv FROM \"{table}\" WHERE acl @> ARRAY['public']"))
    )
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (word)").format(lexicon))
    postings.build(conn, table)
    cited = xrefs.citations_by_chunk(chunks)
    xrefs.build(conn, table, chunks, cited)
    citations.build(conn, table, chunks, cited)
    protect_version(conn, table)
    conn.execute(sql.SQL("ANALYZE {}").format(ident))
    return inserted


def _source_acls(chunks: pd.DataFrame) -> dict[str, list[str]]:
    return {str(sid): sorted({p for acl in frame["acl"] for p in acl}) for sid, frame in chunks.groupby("source_id")}


def protect_version(conn: psycopg.Connection, table: str) -> None:
    """Row-level security on a version's chunks and its cross-reference edges (lectio.index.security).
    The BM25 word statistics and the citation counts come from public chunks only and are readable."""
    protected = [table] + [t for t in (xrefs.table_name(table), postings.table_name(table)) if table_exists(conn, t)]
    readable = [t for t in (lexicon_table(table), citations.table_name(table)) if table_exists(conn, t)]
    security.protect(conn, protected, readable)


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


def lexicon_table(chunk_table: str) -> str:
    return chunk_table.replace("chunks_", "lexicon_", 1)


def _copy_rows(chunks: pd.DataFrame):
    frame = chunks[[name for name, _ in _CHUNK_COLUMNS]].astype(object)
    frame = frame.where(pd.notna(frame), None)
    for row in frame.itertuples(index=False):
        values = list(row)
        for i, (name, _) in enumerate(_CHUNK_COLUMNS):
            if name in ("acl", "refs"):
                values[i] = list(values[i]) if values[i] is not None else []
            elif name == "metadata":
                values[i] = Jsonb(values[i] or {})
            elif name in ("tokens", "ordinal", "chapter", "verse") and values[i] is not None:
                values[i] = int(values[i])
        yield values
