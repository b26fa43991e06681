"""The deployment's roles (docker/roles.sql, what docker-compose's PostgreSQL runs once): lectio
builds and serves as an owner that is not a superuser, the search side sees only what the
caller may, and the owner cannot reach Dagster's storage. Run here against a fresh embedded
server as the external server docker-compose would be."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from tests.conftest import FIXTURES, own_home

pytestmark = [pytest.mark.slow, pytest.mark.network]
ROOT = Path(__file__).resolve().parents[3]

SOURCES = """sources:
  - {id: bookshop, kind: document, format: markdown, path: bookshop_policy.md, acl: [public]}
  - {id: staff-guide, kind: document, format: markdown, path: staff_guide.md, acl: ["group:staff"]}
"""


def _socket_url(superuser_url: str, user: str, database: str) -> str:
    host = parse_qs(urlsplit(superuser_url).query)["host"][0]
    return f"postgresql://{user}@/{database}?host={host}"


@pytest.fixture()
def deployment(monkeypatch):
    """A home whose lectio and Dagster databases live on a server set up by docker/roles.sql."""
    from lectio.index.database import _embedded_server_at

    files = [FIXTURES / "documents" / "bookshop_policy.md", FIXTURES / "staff_guide.md"]
    with own_home("lectio-roles-", write_sources=lambda: SOURCES, files=files) as home:
        superuser = _embedded_server_at(home.settings.home).get_uri("postgres")
        subprocess.run([shutil.which("psql") or "psql", "--no-psqlrc", "-q", "-v", "lectio_password=unused",
                        "-v", "dagster_password=unused", "-d", superuser, "-f", str(ROOT / "docker" / "roles.sql")],
                       check=True, capture_output=True)
        monkeypatch.setenv("DATABASE_URL", _socket_url(superuser, "lectio", "lectio"))
        monkeypatch.setenv("DAGSTER_DATABASE_URL", _socket_url(superuser, "dagster", "dagster"))
        yield superuser


def test_lectio_runs_and_serves_without_a_superuser(deployment, capsys, caplog):
    from cli import main as cli

    caplog.set_level(logging.WARNING)
    assert cli(["run"]) == 0
    capsys.readouterr()
    assert cli(["search", "staff confidentiality", "--json"]) == 0
    anonymous = {hit["source_id"] for hit in json.loads(capsys.readouterr().out)["results"]}
    assert anonymous == {"bookshop"}
    assert cli(["search", "staff confidentiality", "--json", "--principal", "group:staff"]) == 0
    assert "staff-guide" in {hit["source_id"] for hit in json.loads(capsys.readouterr().out)["results"]}
    # What roles.sql did, the owner need not try again and warn about.
    assert not [r.getMessage() for r in caplog.records if r.name == "lectio.index.security"]

    owner = _socket_url(deployment, "lectio", "lectio")
    with psycopg.connect(owner) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
        # The secret is the owner's alone; the reader may not read it.
        conn.execute("SET ROLE lectio_reader")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM lectio_secret")
    for user, database in (("lectio", "dagster"), ("lectio_reader", "dagster"), ("lectio_reader", "postgres"),
                           ("dagster", "lectio")):
        with pytest.raises(psycopg.OperationalError, match="permission denied"):
            psycopg.connect(_socket_url(deployment, user, database)).close()
