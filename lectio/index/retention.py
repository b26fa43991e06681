"""Retention: which index versions are dropped, and dropping them. Kept are the live version,
its rollback target (unless revoked), versions still building and the `keep` most recent other
ready versions; `lectio index prune` and a migration's switch both apply it."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import psycopg

from lectio.index import mirror, versions
from lectio.settings import load_settings

DEFAULT_KEEP = 3  # other ready versions kept besides the live one and the rollback target


def retain(conn: psycopg.Connection, keep: int = DEFAULT_KEEP, home: Path | None = None) -> list[str]:
    """Drop every version `to_drop` names; a version a killed build left behind is dropped once
    its builder is gone. Each drop is one transaction (versions.drop_version), and takes the
    version's mirror from `home` (LECTIO_HOME's by default) with it, as it does the mirrors of
    versions dropped before drops did. Returns what was dropped."""
    if keep < 0:
        raise ValueError("keep must be 0 or more")
    home = home or load_settings().home
    versions.mark_abandoned_builds(conn)
    listed = [(v.version, v.status) for v in versions.list_versions(conn)]
    dropped = []
    for version in to_drop(listed, versions.live_version(conn), versions.previous_version(conn), keep):
        try:
            versions.drop_version(conn, version, home)
        except ValueError:
            continue  # switched to, or rebuilt, since it was listed: it stays
        dropped.append(version)
    mirror.sweep(home, {v.version for v in versions.list_versions(conn)})
    return dropped


def to_drop(listed: Sequence[tuple[str, str]], live: str | None, previous: str | None, keep: int) -> list[str]:
    """Of (version, status) pairs, oldest first: what retention drops. Kept are the live
    version, the rollback target unless it is revoked (it may never be served again), versions
    still building, and the `keep` most recent other ready versions."""
    protected = {live} | ({previous} if previous and dict(listed).get(previous) != "revoked" else set())
    others = [(v, status) for v, status in listed if v not in protected and status != "building"]
    ready = [v for v, status in others if status == "ready"]
    kept = set(ready[-keep:]) if keep else set()  # ready[-0:] would be all of them
    return [v for v, _ in others if v not in kept]
