"""The version registry: each index version's record, its identity (fingerprint), the live
pointer and the rollback target, and dropping a version with everything it owns.

An index version is built completely in its own table before anything points at it; switching
the live version is a single-row update in one transaction, so a reader never sees a half-built
index and a failed build leaves the live one as it was.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from lectio.embedding.packaged import follow_live
from lectio.index import locks, mirror, tables
from lectio.settings import load_settings


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
    # BM25's mean document length and number of documents, both over public chunks only
    # (lectio.index.postings.statistics).
    avg_doc_lexemes: float | None = None
    bm25_docs: int | None = None
    # The trained models its searches read where a setting says "active", by the setting's path.
    rankers: dict[str, str] = field(default_factory=dict)

    @property
    def bm25_corpus(self) -> tuple[float, float]:
        """BM25's N and mean document length, as a search scores with them: the same for every
        caller, and moved by no private chunk."""
        return float(self.bm25_docs or 1), float(self.avg_doc_lexemes or 1.0)


def source_fingerprints(chunks: pd.DataFrame) -> dict[str, str]:
    """Per source, the identity of its chunks (ids, texts, ACLs): what one run made, so the index
    can tell that the chunks it is about to load are still those."""
    return {str(sid): fingerprint(frame, "") for sid, frame in chunks.groupby("source_id", sort=True)}


def fingerprint(chunks: pd.DataFrame, model_id: str) -> str:
    """Identity of an index's content: same chunks, same model, same layout → same index."""
    digest = hashlib.sha256(f"{tables.INDEX_LAYOUT}|{model_id}".encode())
    ordered = chunks.sort_values("chunk_id")
    for row in ordered[["chunk_id", "content_hash", "acl", "ruleset", "parent_id"]].itertuples(index=False):
        digest.update(json.dumps(list(row), default=list).encode())
    return digest.hexdigest()


def same_vectors(model_id: str, other: str) -> bool:
    """Whether two model ids make the same vectors: the same model, release and numerics (the
    runtime alone, torch or ONNX, makes the same ones)."""
    from lectio.embedding.backends import BACKENDS

    def vectors_of(model: str) -> str:
        return "+".join(part for part in model.split("+") if part not in BACKENDS)

    return vectors_of(model_id) == vectors_of(other)


def list_versions(conn: psycopg.Connection) -> list[IndexVersion]:
    live = live_version(conn)
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} FROM index_versions ORDER BY created_at, version"
    ).fetchall()
    return [_version(row, live) for row in rows]


_VERSION_COLUMNS = ("version, table_name, ruleset, model_id, fingerprint, sources, rows, status, metrics, "
                    "revoked_reason, layout, avg_doc_lexemes, bm25_docs, rankers")


def _version(row: tuple, live: str | None) -> IndexVersion:
    return IndexVersion(*row[:9], live=(row[0] == live), revoked_reason=row[9], layout=row[10], avg_doc_lexemes=row[11],
                        bm25_docs=row[12], rankers=row[13] or {})


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


def previous_version(conn: psycopg.Connection) -> str | None:
    """The rollback target: what was live before the last switch."""
    row = conn.execute("SELECT previous FROM live_index").fetchone()
    return row[0] if row else None


def find_ready_version(conn: psycopg.Connection, fp: str) -> str | None:
    row = conn.execute(
        "SELECT version FROM index_versions WHERE fingerprint = %s AND status = 'ready' "
        "ORDER BY created_at DESC LIMIT 1",
        (fp,),
    ).fetchone()
    return row[0] if row else None


def switch_live(conn: psycopg.Connection, version: str) -> None:
    """Make `version` the one searched. The home then embeds new text with its model (an adapted
    model stays the home's after a migration to it; a switch back to a packaged model's version
    goes back to that)."""
    with conn.transaction():
        status = conn.execute("SELECT status, model_id FROM index_versions WHERE version = %s", (version,)).fetchone()
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
    home_follows_live(conn)


def home_follows_live(conn: psycopg.Connection, home: Path | None = None) -> None:
    """The home's model made the live version's again, as switch_live records it once its switch
    has committed: a process killed between the two left the home embedding with the previous
    model, and its next run would have built, and switched to, a version of that model (undoing
    the migration or the rollback). Each run calls this before it takes its model."""
    live = live_version(conn)
    info = get_version(conn, live) if live else None
    if info is not None:
        follow_live(info.model_id.partition("@")[0], home)


def revoked_reason(conn: psycopg.Connection, version: str) -> str:
    row = conn.execute("SELECT revoked_reason FROM index_versions WHERE version = %s", (version,)).fetchone()
    return (row[0] if row else None) or "revoked"


def choose_ranker(conn: psycopg.Connection, version: str, setting: str, model_id: str | None) -> None:
    """Make `model_id` (None: none) what `version`'s searches read where `setting` says "active"."""
    change = {setting: model_id} if model_id else {}
    conn.execute("UPDATE index_versions SET rankers = (rankers - %s) || %s WHERE version = %s",
                 (setting, Jsonb(change), version))


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
        with locks.builder_gone(conn, number) as gone:
            if gone:
                conn.execute(
                    "UPDATE index_versions SET status = 'abandoned' WHERE version = %s AND status = 'building'",
                    (version,),
                )
                abandoned.append(version)
    return abandoned


def drop_version(conn: psycopg.Connection, version: str, home: Path | None = None) -> None:
    """Drop everything a version owns: its tables and its record, in one transaction, then its
    lexical mirror in the home (lectio.index.mirror), which holds its words and chunk ids.

    The live version and the rollback target are refused; the live pointer is locked for the
    transaction so neither can become one of them meanwhile."""
    _drop_tables(conn, version)
    mirror.remove(home or load_settings().home, version)


def _drop_tables(conn: psycopg.Connection, version: str) -> None:
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
        for owned in tables.version_tables(conn, table):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(owned)))
        conn.execute("DELETE FROM index_versions WHERE version = %s", (version,))


def source_rulesets(conn: psycopg.Connection, version: str) -> dict[str, set[str]]:
    """Per source, the ruleset versions its chunks in `version` were cut by (one query over the
    version's table, read as the owner)."""
    table = get_version(conn, version).table_name
    rows = conn.execute(sql.SQL("SELECT source_id, array_agg(DISTINCT ruleset) FROM {} GROUP BY source_id").format(
        sql.Identifier(table))).fetchall()
    return {sid: set(rulesets) for sid, rulesets in rows}


def version_chunks(conn: psycopg.Connection, version: str) -> pd.DataFrame:
    """A version's chunks as a frame of the chunk columns (no embeddings), read as the owner,
    past row-level security: for checks over a whole version (migrations), never to answer a
    caller."""
    info = get_version(conn, version)
    if info is None or info.status != "ready":
        raise ValueError(f"index version {version!r} is not ready")
    names = [name for name, _ in tables.CHUNK_COLUMNS]
    rows = conn.execute(
        sql.SQL("SELECT {} FROM {} ORDER BY chunk_id").format(
            sql.SQL(", ").join(map(sql.Identifier, names)), sql.Identifier(info.table_name))
    ).fetchall()
    frame = pd.DataFrame(rows, columns=names)
    # Tables of layout 3 hold metadata as JSON text inside a jsonb string.
    frame["metadata"] = frame["metadata"].map(lambda m: json.loads(m) if isinstance(m, str) else m)
    return frame
