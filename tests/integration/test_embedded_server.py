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


def test_processes_opening_the_server_side_by_side_leave_a_secured_home_closed(database, settings):
    """Each process that opens the embedded server widens the home for a moment (the library
    does) and puts it back; two at once must not put back each other's widened mode."""
    import subprocess
    import sys
    from pathlib import Path

    from lectio.settings import secure_home

    secure_home(settings)
    opening = ("from lectio.index.database import ensure_database; from lectio.settings import load_settings; "
               "ensure_database(load_settings())")
    processes = [subprocess.Popen([sys.executable, "-c", opening], cwd=Path(__file__).resolve().parents[2])
                 for _ in range(6)]
    assert [p.wait(timeout=300) for p in processes] == [0] * 6
    assert settings.home.stat().st_mode & 0o077 == 0o011
