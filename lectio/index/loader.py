"""The bulk loader: a new index version's chunk table filled by COPY from chunks whose embeddings
are all cached, then its indexes and companion tables (BM25 lexicon and postings,
cross-references, citations) built and protected before it is marked 'ready'."""

from __future__ import annotations

import json
import time

import pandas as pd
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from lectio.embedding.model import DIMENSIONS
from lectio.index import citations, indexes, locks, postings, tables, versions, xrefs


def build_version(conn: psycopg.Connection, chunks: pd.DataFrame, model_id: str, fp: str) -> versions.IndexVersion:
    """Load chunks (whose embeddings are all cached) into a new version table and index it."""
    started = time.monotonic()
    number = conn.execute("UPDATE index_version_counter SET last = last + 1 RETURNING last").fetchone()[0]
    version, table = f"v{number}", f"chunks_v{number}"
    with locks.building(conn, number):
        _register(conn, version, table, chunks, model_id, fp)
        try:
            with conn.transaction():
                rows = _load_table(conn, table, chunks, model_id)
                conn.execute(
                    sql.SQL(
                        "UPDATE index_versions SET status = 'ready', rows = %s, build_seconds = %s, layout = %s, "
                        "(bm25_docs, avg_doc_lexemes) = ({}) WHERE version = %s"
                    ).format(postings.statistics(table)),
                    (rows, time.monotonic() - started, tables.INDEX_LAYOUT, version),
                )
        except BaseException:
            # The table was created in the rolled-back transaction; only the record remains.
            conn.execute("UPDATE index_versions SET status = 'failed' WHERE version = %s", (version,))
            raise
    return versions.get_version(conn, version)


def _register(conn: psycopg.Connection, version: str, table: str, chunks: pd.DataFrame, model_id: str, fp: str) -> None:
    rulesets = ",".join(sorted(chunks["ruleset"].unique()))
    sources = sorted(chunks["source_id"].unique())
    conn.execute(
        # The live version's trained models come with it: a migration is judged, and goes live,
        # searched as the live version is (the gate turns them on or off on the live one).
        "INSERT INTO index_versions (version, table_name, ruleset, model_id, fingerprint, sources, source_acls, status, "
        "rankers) VALUES (%s, %s, %s, %s, %s, %s, %s, 'building', coalesce((SELECT rankers FROM index_versions "
        "WHERE version = (SELECT version FROM live_index)), '{}'))",
        (version, table, rulesets, model_id, fp, json.dumps(sources), Jsonb(_source_acls(chunks))),
    )


def _load_table(conn: psycopg.Connection, table: str, chunks: pd.DataFrame, model_id: str) -> int:
    column_defs = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(pg_type)) for name, pg_type in tables.CHUNK_COLUMNS
    )
    _stage(conn, chunks, column_defs)
    inserted = _insert_embedded(conn, table, column_defs, model_id)
    if inserted != len(chunks):
        # Nothing is dropped silently: a chunk without an embedding fails the build.
        raise RuntimeError(f"{len(chunks) - inserted} of {len(chunks)} chunks have no cached embedding")
    indexes.create(conn, table)
    _build_companions(conn, table, chunks)
    tables.protect_version(conn, table)
    conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    return inserted


def _stage(conn: psycopg.Connection, chunks: pd.DataFrame, column_defs: sql.Composable) -> None:
    names = sql.SQL(", ").join(sql.Identifier(name) for name, _ in tables.CHUNK_COLUMNS)
    conn.execute(sql.SQL("CREATE TEMP TABLE staging ({}) ON COMMIT DROP").format(column_defs))
    with conn.cursor().copy(sql.SQL("COPY staging ({}) FROM STDIN (FORMAT BINARY)").format(names)) as copy:
        copy.set_types([pg_type for _, pg_type in tables.CHUNK_COLUMNS])
        for row in _copy_rows(chunks):
            copy.write_row(row)


def _insert_embedded(conn: psycopg.Connection, table: str, column_defs: sql.Composable, model_id: str) -> int:
    """Create the version's chunk table and fill it from staging joined with the embedding cache."""
    ident = sql.Identifier(table)
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
    return conn.execute(
        sql.SQL(
            "INSERT INTO {table} ({names}, embedding) SELECT {s_names}, c.embedding "
            "FROM staging s JOIN embedding_cache c ON c.content_hash = s.content_hash AND c.model_id = %s"
        ).format(
            table=ident,
            names=sql.SQL(", ").join(sql.Identifier(name) for name, _ in tables.CHUNK_COLUMNS),
            s_names=sql.SQL(", ").join(sql.Identifier("s", name) for name, _ in tables.CHUNK_COLUMNS),
        ),
        (model_id,),
    ).rowcount


def _build_companions(conn: psycopg.Connection, table: str, chunks: pd.DataFrame) -> None:
    # Document frequencies for BM25: ts_rank alone knows nothing of how rare a word is. Counted
    # over public chunks only, as BM25's other statistics are (lectio.index.postings): the reader
    # may read this table, and a word that only a private note holds must not show there (search
    # treats a word missing here as rare).
    lexicon = sql.Identifier(tables.lexicon_table(table))
    conn.execute(
        sql.SQL("CREATE TABLE {lexicon} AS SELECT word, ndoc FROM ts_stat({q})").format(
            lexicon=lexicon, q=sql.Literal(f"SELECT tsv FROM \"{table}\" WHERE {postings.PUBLIC_ROWS}"))
    )
    conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY (word)").format(lexicon))
    postings.build(conn, table)
    cited = xrefs.citations_by_chunk(chunks)
    xrefs.build(conn, table, chunks, cited)
    citations.build(conn, table, chunks, cited)


def _source_acls(chunks: pd.DataFrame) -> dict[str, list[str]]:
    return {str(sid): sorted({p for acl in frame["acl"] for p in acl}) for sid, frame in chunks.groupby("source_id")}


def _copy_rows(chunks: pd.DataFrame):
    frame = chunks[[name for name, _ in tables.CHUNK_COLUMNS]].astype(object)
    frame = frame.where(pd.notna(frame), None)
    for row in frame.itertuples(index=False):
        values = list(row)
        for i, (name, _) in enumerate(tables.CHUNK_COLUMNS):
            if name in ("acl", "refs"):
                values[i] = list(values[i]) if values[i] is not None else []
            elif name == "metadata":
                values[i] = Jsonb(values[i] or {})
            elif name in ("tokens", "ordinal", "chapter", "verse") and values[i] is not None:
                values[i] = int(values[i])
        yield values
