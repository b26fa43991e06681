"""The embedded server is sized for search (its buffer cache holds the HNSW pages a query walks),
and opening it changes no folder lectio did not create."""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lectio.index.database import ensure_database, open_database, shared_buffers_mb, stop_embedded

PROJECT = Path(__file__).resolve().parents[3]
# Only a server started by root runs as a system user of its own, which must pass the folders above
# its data; started by anyone else it is that user's, and nothing is opened for it.
AS_ROOT = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")


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
    """Processes opening the embedded server side by side (the daemon's runs) leave a secured home
    as secure_home left it: none of them widens it, not even for a moment."""
    import subprocess
    import sys
    from pathlib import Path

    from lectio.settings import secure_home

    secure_home(settings)
    opening = ("from lectio.index.database import ensure_database; from lectio.settings import load_settings; "
               "ensure_database(load_settings())")
    processes = [subprocess.Popen([sys.executable, "-c", opening], cwd=Path(__file__).resolve().parents[3])
                 for _ in range(6)]
    assert [p.wait(timeout=300) for p in processes] == [0] * 6
    assert settings.home.stat().st_mode & 0o077 == 0o011


@AS_ROOT
def test_a_home_under_a_private_folder_is_refused_in_one_line_and_the_folder_stays_private(settings):
    """The server's system user cannot pass a 0700 folder that lectio did not create: lectio says
    which folder and what to do, rather than open it (and every folder above it) to everyone."""
    private = Path(tempfile.mkdtemp(prefix="lectio-private-"))  # mode 0700, as mkdtemp makes it
    home = private / "home"
    try:
        done = subprocess.run([sys.executable, "-m", "cli", "index", "list"], cwd=PROJECT,
                              env={**os.environ, "LECTIO_HOME": str(home)}, capture_output=True, text=True)
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        assert done.returncode == 2, done.stdout + done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith("lectio index: the embedded PostgreSQL server runs as system user")
        # root's own group owns it, and the server keeps root's groups: g+x is the bit that lets it pass.
        assert f"cannot pass {private} (mode 0700)" in line and f"chmod g+x {private}" in line
    finally:
        stop_embedded(dataclasses.replace(settings, home=home))
        shutil.rmtree(private)


@AS_ROOT
def test_a_home_under_a_folder_it_may_only_pass_starts_and_leaves_that_folder_unlisted(settings):
    """A parent with the search bit alone (0711) is all the server needs; it stays 0711, where the
    library used to make it, and every folder above, listable by everyone (0755)."""
    parent = Path(tempfile.mkdtemp(prefix="lectio-passable-"))
    parent.chmod(0o711)
    home = parent / "home"
    try:
        with open_database(home).connect() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert stat.S_IMODE(parent.stat().st_mode) == 0o711
    finally:
        stop_embedded(dataclasses.replace(settings, home=home))
        shutil.rmtree(parent)


def test_a_passage_check_that_fails_by_itself_is_tried_again_and_never_blames_a_folder(monkeypatch):
    """The check runs as the server's system user; when it fails without naming a folder (a
    fork refused on a busy machine: the one edge faked here), it is tried again, and a check
    that keeps failing says so, not that some folder's mode shuts the user out."""
    import subprocess

    from lectio.index import database

    real_run, calls = subprocess.run, []

    def flaky(args, **options):
        calls.append(args)
        if len(calls) < database.PASSAGE_ATTEMPTS:
            return subprocess.CompletedProcess(args, 1, stdout="", stderr="sh: fork: Resource temporarily unavailable")
        return real_run(args, **options)

    import tempfile

    open_folder = Path(tempfile.mkdtemp(prefix="lectio-passage-"))
    open_folder.chmod(0o755)  # one the server's user can pass (pytest's own tmp folder is 0700)
    monkeypatch.setattr(database.time, "sleep", lambda _: None)
    monkeypatch.setattr(database.subprocess, "run", flaky)
    database._require_passage(open_folder / "pgdata")  # the last try runs for real, and passes
    assert len(calls) == database.PASSAGE_ATTEMPTS

    monkeypatch.setattr(database.subprocess, "run", lambda args, **options: subprocess.CompletedProcess(
        args, 1, stdout="", stderr="sh: fork: Resource temporarily unavailable"))
    with pytest.raises(OSError) as refused:
        database._require_passage(open_folder / "pgdata")
    open_folder.rmdir()
    said = str(refused.value)
    assert "could not check" in said and "fork" in said and "mode" not in said and "\n" not in said
