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
from cli import main as cli

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


def _mount(folder: Path, size: str, mode: str = "0755") -> None:
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode={mode}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a small file system cannot be mounted here: {mounted.stderr.strip()}")


@pytest.fixture
def small_disk(request, monkeypatch):
    """A file system of its own (300 MB, or the size the test is parametrized with), holding the home."""
    mount = Path(tempfile.mkdtemp(prefix="lectio-full-disk-"))
    mount.chmod(0o755)
    _mount(mount, getattr(request, "param", "300m"))
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
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], timeout=300)


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


@pytest.fixture
def full_folder():
    """full_folder(path): a full disk of its own mounted at `path` (one step's folder of the
    home), unmounted at the end."""
    mounted = []

    def mount(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        _mount(folder, "1m", "0700")
        mounted.append(folder)
        _fill(folder)
        return folder

    yield mount
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _failed_line(out: str) -> str:
    """The run's line for the failed source, checked to be the only thing it says of it."""
    assert "Traceback" not in out, out
    failed = [line for line in out.splitlines() if "FAILED notes:" in line]
    assert len(failed) == 1, out
    return failed[0]


@pytest.mark.parametrize("small_disk", ["3m"], indirect=True)
def test_a_new_home_on_a_full_disk_says_why_its_server_did_not_start(small_disk):
    """initdb says why it could not make the data folder only on its stderr: read, not "no reason
    in its log"."""
    mount, sources = small_disk
    run = _lectio("run", "--sources", str(sources))
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    said = run.stderr.splitlines()[-1]
    assert said.startswith("lectio run: the embedded PostgreSQL under") and "did not start: could not" in said, said
    assert "No space left on device" in said and f"the disk that holds {mount}/home/pgdata is full" in said, said


def test_the_model_export_on_a_full_disk_is_one_line_naming_its_folder(small_disk, full_folder, capsys):
    mount, sources = small_disk
    models = full_folder(mount / "home" / "models")
    assert cli(["run", "--sources", str(sources)]) == 1
    line = _failed_line(capsys.readouterr().out)
    assert "the disk is full (" in line and f"cannot write its export into {models}/" in line, line
    assert "No space left on device" in line and "OSError" not in line, line


def test_a_search_whose_model_export_meets_a_full_disk_names_its_folder(small_disk, full_folder):
    mount, sources = small_disk
    assert _lectio("run", "--sources", str(sources)).returncode == 0
    models = full_folder(mount / "home" / "models")  # the export hidden, and no room to make it again
    search = _lectio("search", "grace")
    assert search.returncode == 2 and search.stderr.count("\n") == 1, search.stderr
    assert search.stderr.startswith("lectio search: the disk is full (the onnx embedding backend cannot load: "
                                    f"cannot write its export into {models}/"), search.stderr


def test_dagsters_stored_outputs_on_a_full_disk_are_one_line_naming_the_file(small_disk, full_folder, capsys):
    mount, sources = small_disk
    assert cli(["run", "--sources", str(sources)]) == 0
    storage = full_folder(mount / "home" / "storage")
    # Larger than the outputs stored before, whose pages the full disk would otherwise reuse.
    (mount / "notes.md").write_text("# Notes\n\n" + "".join(f"Grace and peace, line {i}.\n\n" for i in range(300)))
    capsys.readouterr()
    assert cli(["run", "--sources", str(sources)]) == 1
    line = _failed_line(capsys.readouterr().out)
    assert f"the disk is full ([Errno 28] could not store {storage}/raw_texts/notes: No space left on device)" in line


def test_the_server_dying_mid_run_is_one_line_and_the_next_run_builds_on(small_disk):
    """PostgreSQL stops when it cannot make its next WAL file. Left a megabyte short of the end of
    its last one, with room for the run's rows but not for a new 16 MB WAL file, the server
    stops as the run commits: Dagster's storage lost its connection in 146 lines, tracebacks and
    SQL, where one line says why the server stopped."""
    mount, sources = small_disk
    assert _lectio("run", "--sources", str(sources)).returncode == 0
    _wal_a_megabyte_from_its_end(mount / "home" / "pgdata")
    filler = _fill_leaving(mount, 6 << 20)
    (mount / "notes.md").write_text("# Notes\n\n" + "".join(
        f"## Part {i}\n\nGrace and peace to you, line {i}, mercy {i * 7}.\n\n" for i in range(600)))
    run = _lectio("run", "--sources", str(sources))
    assert run.returncode == 2 and "Traceback" not in run.stderr and "[SQL:" not in run.stderr, run.stderr
    said = run.stderr.splitlines()[-1]
    assert said.startswith(f"lectio run: the embedded PostgreSQL under {mount}/home/pgdata stopped: could not "), said
    assert "No space left on device; the disk that holds" in said and "the live index was not changed" in said, said

    filler.unlink()
    _lectio("down")
    assert _lectio("run", "--sources", str(sources)).returncode == 0
    found = _lectio("search", "line 599, mercy 4193", "--json")
    assert "mercy 4193" in json.loads(found.stdout)["results"][0]["text"]


def _wal_a_megabyte_from_its_end(pgdata: Path) -> None:
    """The server's WAL moved, by messages that write nothing else, to a megabyte before the end
    of the last WAL file it has made: the next megabyte of WAL needs a new file."""
    from lectio.index.database import ensure_database
    from lectio.settings import load_settings

    segment, left = 16 << 20, 1 << 20
    with psycopg.connect(ensure_database(load_settings()).url, autocommit=True) as conn:
        while True:
            last = max(int(f.name[-8:], 16) for f in (pgdata / "pg_wal").iterdir() if len(f.name) == 24)
            at, offset = divmod(conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'").fetchone()[0], segment)
            if at == last and segment - offset <= left:
                return
            step = min(segment - offset - left + (64 << 10), 1 << 20) if at == last else 1 << 20
            conn.execute("SELECT pg_logical_emit_message(false, 'lectio-test', repeat('x', %s))", (int(step),))


def _fill_leaving(folder: Path, free: int) -> Path:
    filler = folder / "filler"
    found = os.statvfs(folder)
    with open(filler, "wb") as out:
        out.truncate(0)
        left = found.f_bavail * found.f_frsize - free
        while left > 0:
            left -= out.write(b"\0" * min(left, 1 << 20))
    return filler
