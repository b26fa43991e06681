"""Checks over what is stored in the database: the embedding cache's vectors for a source's
texts, and an index version's table against its record."""

from __future__ import annotations

from typing import Iterable

import psycopg
from psycopg import sql

from lectio.quality.checks import embedding_vectors
from lectio.quality.results import CheckResult


def stored_embeddings(conn: psycopg.Connection, hashes: Iterable[str], model_id: str) -> CheckResult:
    """`embedding_vectors` over what the embedding cache holds for these texts."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    wanted = sorted(set(hashes))
    rows = conn.execute(
        "SELECT content_hash, embedding FROM embedding_cache WHERE model_id = %s AND content_hash = ANY(%s)",
        (model_id, wanted),
    ).fetchall()
    found = dict(rows)
    return embedding_vectors(wanted, [found.get(h) for h in wanted], model_id)


def index_rows(conn: psycopg.Connection, version: str, expected_chunks: int | None = None) -> CheckResult:
    """An index version's table holds as many rows as its record says, and as many as the
    chunks it was built from (when the caller knows them)."""
    row = conn.execute("SELECT table_name, rows, status FROM index_versions WHERE version = %s", (version,)).fetchone()
    if row is None:
        return CheckResult("index_row_count", False, False, f"no index version {version!r}")
    table, recorded, status = row
    counted = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()[0]
    counts = {"table_rows": counted, **({"recorded_rows": recorded} if recorded is not None else {})}
    problems = []
    if recorded != counted:
        problems.append(f"{table} holds {counted} rows but {version} records {recorded}")
    if expected_chunks is not None:
        counts["chunks"] = expected_chunks
        if counted != expected_chunks:
            problems.append(f"{table} holds {counted} rows for {expected_chunks} chunks")
    description = "; ".join(problems) or f"{version} ({status}): {counted} rows, one per chunk"
    return CheckResult("index_row_count", not problems, False, description, counts)
