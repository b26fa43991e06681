"""The embedded server is sized for search: its buffer cache holds the HNSW pages a query walks."""

from __future__ import annotations

from lectio.index.database import ensure_database, shared_buffers_mb


def test_the_embedded_server_keeps_the_buffers_sized_from_this_machine(database, settings):
    with database.connect() as conn:
        setting = conn.execute("SELECT current_setting('shared_buffers')").fetchone()[0]
    wanted = shared_buffers_mb()
    assert setting == (f"{wanted // 1024}GB" if wanted % 1024 == 0 else f"{wanted}MB")
    # Opening the home again finds the setting in place and does not restart the server.
    with database.connect() as conn:
        started = conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0]
    with ensure_database(settings).connect() as conn:
        assert conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0] == started
