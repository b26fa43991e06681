"""Versions that show more than the sources file allows now: an ACL narrowed after a version was
built (a private source published as public by mistake, then fixed) must take that version out
of service for good, not leave it one switch, rollback or `--index` away."""

from __future__ import annotations

from typing import Iterable, Mapping

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from lectio.index import security, store, xrefs


def source_acls(conn: psycopg.Connection, version: str) -> dict[str, list[str]]:
    """Per source of a version, every principal its chunks are visible to (read from the version's
    table once for versions built before this was recorded)."""
    row = conn.execute("SELECT table_name, source_acls FROM index_versions WHERE version = %s", (version,)).fetchone()
    if row is None:
        raise ValueError(f"no index version {version!r}")
    table, recorded = row
    if recorded is not None:
        return recorded
    if not store.table_exists(conn, table):
        return {}
    found = dict(conn.execute(sql.SQL(
        "SELECT source_id, array_agg(DISTINCT p ORDER BY p) FROM {}, unnest(acl) p GROUP BY source_id"
    ).format(sql.Identifier(table))).fetchall())
    conn.execute("UPDATE index_versions SET source_acls = %s WHERE version = %s", (Jsonb(found), version))
    return found


def exposures(conn: psycopg.Connection, version: str, allowed: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Per source: the principals the version shows its chunks to that `allowed` (source → the ACL
    the sources file gives it now) does not. A source the file no longer lists is not judged."""
    exposed = {}
    for sid, principals in source_acls(conn, version).items():
        if sid in allowed:
            extra = sorted(set(principals) - set(allowed[sid]))
            if extra:
                exposed[sid] = extra
    return exposed


def describe_exposure(exposed: Mapping[str, list[str]]) -> str:
    return "; ".join(f"source {sid} shows its chunks to {', '.join(p)}, which the sources file no longer allows"
                     for sid, p in sorted(exposed.items()))


def revoke_exposing(conn: psycopg.Connection, allowed: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Revoke every ready version that shows a chunk more widely than `allowed`: it is never served
    again (not by name, not by switch or rollback), and the reader loses its grant on its tables.
    Returns version → why. The live version is revoked too: searching it would go on leaking."""
    revoked = {}
    for version, table in conn.execute(
        "SELECT version, table_name FROM index_versions WHERE status = 'ready' ORDER BY created_at"
    ).fetchall():
        exposed = exposures(conn, version, allowed)
        if exposed:
            reason = describe_exposure(exposed)
            with conn.transaction():
                conn.execute("UPDATE index_versions SET status = 'revoked', revoked_reason = %s WHERE version = %s",
                             (reason, version))
                security.withdraw(conn, [t for t in (table, xrefs.table_name(table)) if store.table_exists(conn, t)])
            revoked[version] = reason
    return revoked
