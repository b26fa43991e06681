"""Versions that show more than the sources file allows now: an ACL narrowed after a version was
built (a private source published as public by mistake, then fixed), or a leaked source taken
out of the file, must take that version out of service, not leave it one switch, rollback or
`--index` away.

Judging is done where the sources file is applied (a run, a migration, a switch, a rollback,
`lectio index audit`), never on a search: a search reads, and a sources file in a reader's
environment must not change what everyone else is served. The judgement is the file as it
stands, both ways: a version revoked under a narrower file is served again once the file allows
everything it shows (the ACL widened back, the source listed again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from lectio.index import security, tables, versions
from lectio.sources import Source, SourceError

PUBLIC = "public"


def allowed_acls(sources: Mapping[str, Source | SourceError]) -> dict[str, tuple[str, ...]]:
    """Source id → who the sources file lets see it. An entry that is invalid for another reason
    keeps the ACL it states (a typo in its format must not take the live index down); one whose
    ACL cannot be read, like a source the file no longer lists, is allowed to no one."""
    return {sid: tuple(s.acl or ()) for sid, s in sources.items()}


def source_acls(conn: psycopg.Connection, version: str) -> dict[str, list[str]]:
    """Per source of a version, every principal its chunks are visible to (read from the version's
    table once for versions built before this was recorded)."""
    row = conn.execute("SELECT table_name, source_acls FROM index_versions WHERE version = %s", (version,)).fetchone()
    if row is None:
        raise ValueError(f"no index version {version!r}")
    table, recorded = row
    if recorded is not None:
        return recorded
    if not tables.table_exists(conn, table):
        return {}
    found = dict(conn.execute(sql.SQL(
        "SELECT source_id, array_agg(DISTINCT p ORDER BY p) FROM {}, unnest(acl) p GROUP BY source_id"
    ).format(sql.Identifier(table))).fetchall())
    conn.execute("UPDATE index_versions SET source_acls = %s WHERE version = %s", (Jsonb(found), version))
    return found


def exposures(conn: psycopg.Connection, version: str, allowed: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Per source: the principals the version shows its chunks to that `allowed` (source → the ACL
    the sources file gives it now) does not. `public` in an ACL covers every principal; a source
    missing from `allowed` is allowed to no one."""
    exposed = {}
    for sid, principals in source_acls(conn, version).items():
        now = set(allowed.get(sid, ()))
        extra = [] if PUBLIC in now else sorted(set(principals) - now)
        if extra:
            exposed[sid] = extra
    return exposed


def describe_exposure(exposed: Mapping[str, list[str]], allowed: Mapping[str, Iterable[str]]) -> str:
    def one(sid: str, principals: list[str]) -> str:
        shown = ", ".join(principals)
        if sid not in allowed:
            return f"source {sid} is no longer in the sources file and its chunks are shown to {shown}"
        return f"source {sid} shows its chunks to {shown}, which the sources file no longer allows"

    return "; ".join(one(sid, p) for sid, p in sorted(exposed.items()))


@dataclass
class Judgement:
    revoked: dict[str, str] = field(default_factory=dict)  # version → why
    reinstated: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"revoked {v} ({why})" for v, why in self.revoked.items()]
        parts += [f"served again: {v} (the sources file now allows all it shows)" for v in self.reinstated]
        return "; ".join(parts)


def judge(conn: psycopg.Connection, allowed: Mapping[str, Iterable[str]]) -> Judgement:
    """Revoke every ready version that shows a chunk more widely than `allowed`, the live one
    included (searching it would go on leaking): it is never served, by name, switch or rollback,
    and the reader loses its grant on every table the version owns. Serve again every revoked
    version that shows nothing `allowed` does not."""
    judgement = Judgement()
    for version, table, status in conn.execute(
        "SELECT version, table_name, status FROM index_versions WHERE status IN ('ready', 'revoked') "
        "ORDER BY created_at"
    ).fetchall():
        exposed = exposures(conn, version, allowed)
        if exposed and status == "ready":
            judgement.revoked[version] = describe_exposure(exposed, allowed)
            _revoke(conn, version, table, judgement.revoked[version])
        elif not exposed and status == "revoked" and tables.table_exists(conn, table):
            _reinstate(conn, version, table)
            judgement.reinstated.append(version)
    return judgement


def _revoke(conn: psycopg.Connection, version: str, table: str, reason: str) -> None:
    with conn.transaction():
        conn.execute("UPDATE index_versions SET status = 'revoked', revoked_reason = %s WHERE version = %s",
                     (reason, version))
        security.withdraw(conn, tables.version_tables(conn, table))


def _reinstate(conn: psycopg.Connection, version: str, table: str) -> None:
    with conn.transaction():
        conn.execute("UPDATE index_versions SET status = 'ready', revoked_reason = NULL WHERE version = %s",
                     (version,))
        tables.protect_version(conn, table)


def unavailable(version: str) -> str:
    """What a caller (a search, an evaluation, the service's /ready) is told of a revoked version.
    Why it was revoked names private source ids and the principals they were shown to: that goes
    to the operator (`lectio index list`, the service's log), never to whoever is searching."""
    return f"index version {version} is unavailable"


def refuse_unservable(conn: psycopg.Connection, version: str) -> None:
    """A version that does not exist, is revoked or is not ready is refused in one line that says
    no more than `unavailable` does of a revoked one. Read only: searching never judges (a
    reader's sources file must not revoke what everyone else is served)."""
    info = versions.get_version(conn, version)
    if info is None:
        raise ValueError(f"no index version {version!r}; `lectio index list` shows them")
    if info.status == "revoked":
        raise ValueError(unavailable(version))
    if info.status != "ready":
        raise ValueError(f"index version {version} is {info.status}, not ready")


def switch_judged(conn: psycopg.Connection, version: str, sources: Mapping[str, Source | SourceError]) -> None:
    """A switch or rollback by hand: every version is first judged against the sources file as it
    stands, and `version` is refused if it is missing or revoked. The operator doing it is told
    which sources make it so (versions.switch_live names them)."""
    judge(conn, allowed_acls(sources))
    if versions.get_version(conn, version) is None:
        raise ValueError(f"no index version {version!r}; `lectio index list` shows them")
    versions.switch_live(conn, version)
