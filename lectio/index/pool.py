"""Connections for long-lived readers (a service, a benchmark's workers) that outlive the database.

A connection the server dropped is noticed when it is taken from the pool (psycopg_pool checks
it), and a call that failed because the server went away is retried once the server is back:
this home's embedded server is started again here; an external one is waited for, with a
backoff. Only reads go through here, so running a call again is always safe.

A dead server is noticed in seconds, not psycopg_pool's default 30: a connection is waited for
`wait` seconds (a new one cannot be made while the server is away, so a longer wait only delays
the retry that restarts it), and a connection attempt gives up after CONNECT_SECONDS.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, TypeVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from lectio.index.database import ensure_database, restart_embedded, server_is_down
from lectio.settings import Settings

T = TypeVar("T")
log = logging.getLogger(__name__)
CONNECT_SECONDS = 2  # libpq's connect_timeout; it rounds anything less up to 2


class ReadPool:
    """`size` connections for whole reads, and as many again for `run_pair`'s second connections
    when `pairs` (a service's searches run their vector side on one, beside the lexical side)."""

    def __init__(self, settings: Settings, size: int = 4, attempts: int = 8, first_wait: float = 0.1,
                 pairs: bool = False, wait: float = 2.0):
        self.settings, self.attempts, self.first_wait, self.wait = settings, attempts, first_wait, wait
        self._recovering = threading.Lock()
        url = ensure_database(settings).url
        self._pool = self._open(url, size, "lectio-read")
        # A pool of their own: a thread holding its first connection never waits on another
        # thread's first for its second.
        self._seconds = self._open(url, size, "lectio-read-second") if pairs else None

    def _open(self, url: str, size: int, name: str) -> ConnectionPool:
        return ConnectionPool(url, min_size=1, max_size=size, open=True, name=name, timeout=self.wait,
                              kwargs={"autocommit": True, "connect_timeout": CONNECT_SECONDS},
                              configure=register_vector, check=ConnectionPool.check_connection)

    def run(self, work: Callable[[psycopg.Connection], T]) -> T:
        """`work` on a pooled connection; retried while the server is away, up to `attempts`
        times with waits doubling from `first_wait` (at most 2 s each)."""
        return self._retried(lambda: self._on_one(work))

    def run_pair(self, work: Callable[[psycopg.Connection, psycopg.Connection | None], T]) -> T:
        """`work` on two pooled connections (the second None without `pairs`), retried as `run`."""
        return self._retried(lambda: self._on_two(work))

    def run_once(self, work: Callable[[psycopg.Connection], T]) -> T:
        """`work` once, not retried: for a health check, which must answer while the server is
        away. A failure starts recovery in the background, so a service that a readiness probe
        keeps out of traffic (so nothing searches and retries) still comes back."""
        try:
            return self._on_one(work)
        except psycopg.OperationalError:
            if not self._recovering.locked():  # else one is under way already
                threading.Thread(target=self._recover_quietly, name="lectio-recover", daemon=True).start()
            raise

    def _on_one(self, work):
        with self._pool.connection() as conn:
            return work(conn)

    def _on_two(self, work):
        if self._seconds is None:
            return self._on_one(lambda conn: work(conn, None))
        with self._pool.connection() as conn, self._seconds.connection() as second:
            return work(conn, second)

    def _retried(self, call: Callable[[], T]) -> T:
        for attempt in range(self.attempts):
            try:
                return call()
            except psycopg.OperationalError as exc:
                if attempt == self.attempts - 1:
                    raise
                log.warning("database unavailable (%s); retrying", str(exc).splitlines()[0])
                time.sleep(min(self.first_wait * 2**attempt, 2.0))
                self._recover_quietly()  # a restart that fails is tried again on the next attempt
        raise AssertionError("unreachable")

    def _recover(self) -> None:
        # One thread restarts the server; the others find it up when they get the lock.
        with self._recovering:
            if server_is_down(self.settings):
                restart_embedded(self.settings)
            for pool in self._pools():
                pool.check()

    def _recover_quietly(self) -> None:
        try:
            self._recover()
        except Exception as exc:  # the next check tries again; a background thread has no caller
            log.warning("could not recover the database (%s)", (str(exc).splitlines() or [type(exc).__name__])[0])

    def close(self) -> None:
        for pool in self._pools():
            pool.close()

    def _pools(self) -> list[ConnectionPool]:
        return [pool for pool in (self._pool, self._seconds) if pool is not None]

    def __enter__(self) -> "ReadPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
