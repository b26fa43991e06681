"""A full disk ends every command in one line naming the cause and where to free space, never a
traceback; the live index is untouched, and once space is freed the next run recovers (issue 51,
item 5). The disk is a real one that fills: a small tmpfs holding the whole home, database
included (mounting one needs root, as the project's machines run the suite). A database error
raised as the server raises a full disk's is read the same way through both drivers lectio
meets (psycopg; psycopg2 under SQLAlchemy, Dagster's run storage)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from lectio.index.database import ServerDidNotStart, disk_full
from pipelines.cli import main as cli

RAISE_DISK_FULL = ("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'disk_full', "
                   "MESSAGE = 'could not extend file \"base/1/2\": No space left on device'; END $$")


def test_a_full_disk_is_read_through_every_wrapper(conn, settings):
    with pytest.raises(psycopg.errors.DiskFull) as raised, conn.transaction():
        conn.execute(RAISE_DISK_FULL)
    assert disk_full(raised.value).startswith("could not extend file")
    import sqlalchemy

    engine = sqlalchemy.create_engine(settings_url(conn))
    with pytest.raises(sqlalchemy.exc.OperationalError) as wrapped, engine.connect() as through:
        through.execute(sqlalchemy.text(RAISE_DISK_FULL))
    engine.dispose()
    assert disk_full(RuntimeError("the run failed")) is None
    try:
        raise RuntimeError("creating the run failed") from wrapped.value
    except RuntimeError as outer:
        assert disk_full(outer).startswith("could not extend file")
    with pytest.raises(OSError) as written, open("/dev/full", "w") as device:
        device.write("x")
        device.flush()
    assert "No space left on device" in disk_full(written.value)


def settings_url(conn) -> str:
    info = conn.info
    return f"postgresql+psycopg2://{info.user}@/{info.dbname}?host={info.host}&port={info.port}"


@pytest.fixture
def small_disk(monkeypatch):
    """A 300 MB file system of its own, holding the home."""
    mount = Path(tempfile.mkdtemp(prefix="lectio-full-disk-"))
    mount.chmod(0o755)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m,mode=0755", "tmpfs", str(mount)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small file system cannot be mounted here: {mounted.stderr.strip()}")
    home = mount / "home"
    for key in ("DAGSTER_HOME", "DATABASE_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("LECTIO_HOME", str(home))
    monkeypatch.setenv("LECTIO_EMBED_BACKEND", os.environ.get("LECTIO_EMBED_BACKEND") or "onnx")
    monkeypatch.setenv("LECTIO_EMBED_PRECISION", os.environ.get("LECTIO_EMBED_PRECISION") or "fp32")
    (mount / "notes.md").write_text("# Notes\n\nGrace and peace to you.\n")
    sources = mount / "sources.yaml"
    sources.write_text("sources:\n  - {id: notes, kind: document, format: markdown, path: notes.md, acl: [public]}\n")
    try:
        yield mount, sources
    finally:
        cli(["down"])
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb") as out:
        try:
            while True:
                out.write(b"\0" * (1 << 20))
                out.flush()
        except OSError:
            pass
    return filler


def _lectio(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=300)


def test_a_full_disk_is_one_line_and_the_next_run_recovers(small_disk, capsys):
    mount, sources = small_disk
    assert cli(["run", "--sources", str(sources)]) == 0
    capsys.readouterr()
    (mount / "notes.md").write_text("# Notes\n\nGrace and peace to you, and a new line.\n")
    filler = _fill(mount)

    assert cli(["run", "--sources", str(sources)]) != 0
    said = capsys.readouterr().err
    assert "Traceback" not in said and "No space left on device" in said, said
    assert said.count("\n") == 1 and str(mount) in said
    # While the disk stays full, every command says so in one line (the server cannot start):
    # each a process of its own, as a user's next command is.
    cli(["down"])
    listing = _lectio("index", "list")
    assert listing.returncode == 2 and "Traceback" not in listing.stderr, listing.stderr
    assert listing.stderr.count("\n") == 1 and "did not start" in listing.stderr
    assert "is full: free space there" in listing.stderr

    filler.unlink()
    listing = _lectio("index", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    listed = json.loads(listing.stdout)["versions"]
    assert [(v["version"], v["live"], v["status"]) for v in listed] == [("v1", True, "ready")]  # untouched
    assert cli(["run", "--sources", str(sources)]) == 0  # the next run recovers
    capsys.readouterr()
    assert cli(["search", "a new line", "--json"]) == 0
    assert "a new line" in capsys.readouterr().out


def test_server_did_not_start_names_the_reason_from_its_log(tmp_path):
    log = ("2026-12-06 UTC [1] LOG:  starting PostgreSQL\n"
           "2026-12-06 UTC [2] FATAL:  could not write file \"pg_filenode.map.tmp\": No space left on device\n"
           "2026-12-06 UTC [1] LOG:  database system is shut down\n")
    said = str(ServerDidNotStart(tmp_path / "pgdata", log))
    assert "did not start: could not write file" in said and "is full: free space there" in said
    assert "\n" not in said
