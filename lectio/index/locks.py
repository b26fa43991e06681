"""Advisory locks on the database: one writer at a time, one schema migration at a time, and a
build's hold on its version number while it is 'building'.

Every lock here is a session-level or transaction-level PostgreSQL advisory lock, so a killed
process's locks end with its session and nothing needs cleaning up by hand.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import psycopg

# Key of the transaction lock that serialises schema migration between processes starting at once.
_SCHEMA_LOCK = 4242
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
    server = _server(conn)
    _HELD_HERE.add(server)
    try:
        yield
    finally:
        _HELD_HERE.discard(server)
        _unlock(conn, _WRITER_LOCK)


def writer_held(conn: psycopg.Connection) -> bool:
    """Whether any session holds this database's writer lock now: a writer at work, whichever
    process it is (a process that has run a command and lives on holds nothing)."""
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 0 "
        "AND objid = %s AND objsubid = 1 AND database = (SELECT oid FROM pg_database "
        "WHERE datname = current_database()))", (_WRITER_LOCK,)).fetchone()[0]


# The databases whose writer lock this process holds. Whether a step may skip taking the lock is
# this process's own knowledge, never something a run's config could claim: a launchpad field that
# said "held" let anyone who reached the UI build beside a running writer.
_HELD_HERE: set[tuple] = set()


def _server(conn: psycopg.Connection) -> tuple:
    info = conn.info
    return (info.host, info.port, info.dbname)


@contextmanager
def writer_lock_unless_held(conn: psycopg.Connection, what: str = "this change") -> Iterator[None]:
    """The writer lock, unless this very process already holds it for this database (`lectio
    run` and `lectio migrate` hold it for their whole life and run their builds in process)."""
    if _server(conn) in _HELD_HERE:
        yield
        return
    with writer_lock(conn, what):
        yield


def lock_schema(conn: psycopg.Connection) -> None:
    """Held until the current transaction ends: several processes may start at once, and
    CREATE EXTENSION IF NOT EXISTS is not race-free."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))


@contextmanager
def building(conn: psycopg.Connection, number: int) -> Iterator[None]:
    """Held while version `number` is 'building', and released by PostgreSQL when this session
    ends however it ends: a 'building' record whose lock is free belongs to a dead build."""
    conn.execute("SELECT pg_advisory_lock(%s, %s)", (_BUILD_LOCK, number))
    try:
        yield
    finally:
        _unlock(conn, _BUILD_LOCK, number)


@contextmanager
def builder_gone(conn: psycopg.Connection, number: int) -> Iterator[bool]:
    """True, holding the build lock for the block, when no session builds version `number`.
    Advisory locks are re-entrant within one session, so call it on a connection that is not
    building."""
    free = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_BUILD_LOCK, number)).fetchone()[0]
    try:
        yield free
    finally:
        if free:
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", (_BUILD_LOCK, number))


def _unlock(conn: psycopg.Connection, *key: int) -> None:
    try:
        conn.execute(f"SELECT pg_advisory_unlock({', '.join(['%s'] * len(key))})", key)
    except psycopg.Error:
        pass  # a broken connection: the session, and with it the lock, is gone anyway
