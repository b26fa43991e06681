"""Shared fixtures: one embedded PostgreSQL per test session, a shared corpus download, and
a small fixture corpus (a handful of chapters) run through the real pipeline once."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def fixture_sources(tmp_path_factory) -> Path:
    """A copy of the fixture sources, so tests may write broken sources beside it."""
    folder = tmp_path_factory.mktemp("sources")
    shutil.copytree(FIXTURES, folder, dirs_exist_ok=True)
    return folder / "sources.yaml"


@pytest.fixture(scope="session", autouse=True)
def lectio_env(tmp_path_factory, fixture_sources):
    """A throwaway LECTIO_HOME; the downloaded corpus is shared across sessions.

    Not under pytest's tmp folder: pytest keeps that private (0700) and resets it when another
    session starts, while the embedded server runs as its own system user and must reach it."""
    home = Path(tempfile.mkdtemp(prefix="lectio-test-home-"))
    home.chmod(0o755)
    saved = {k: os.environ.get(k) for k in ("LECTIO_HOME", "LECTIO_CORPUS_DIR", "LECTIO_SOURCES", "DATABASE_URL")}
    os.environ["LECTIO_HOME"] = str(home)
    os.environ.setdefault("LECTIO_CORPUS_DIR", str(PROJECT / ".lectio" / "corpus"))
    os.environ["LECTIO_SOURCES"] = str(fixture_sources)
    os.environ.pop("DATABASE_URL", None)
    yield home
    from lectio.index.database import stop_embedded
    from lectio.settings import load_settings

    stop_embedded(load_settings())
    shutil.rmtree(home, ignore_errors=True)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def settings(lectio_env):
    from lectio.settings import load_settings

    return load_settings()


@pytest.fixture(scope="session")
def database(settings):
    from lectio.index.database import ensure_database

    return ensure_database(settings)


@pytest.fixture()
def conn(database):
    from lectio.index import schema

    with database.connect() as connection:
        schema.ensure_schema(connection)
        yield connection


@pytest.fixture(scope="session")
def main_run(settings):
    """The main job (`lectio run`) over the fixture corpus, once per session."""
    from pipelines.runners import run_main

    return run_main(settings, echo=lambda _: None)


@pytest.fixture()
def foreign_sources(database, fixture_sources):
    """For a test that applies another sources file to the session's database. That file revokes
    every version holding a source it does not list, as it would for a user; afterwards the
    session's own file is applied again, which serves them again, and the live pointer goes back."""
    from lectio.index import revocation, schema, versions
    from lectio.sources import load_sources

    with database.connect() as conn:
        schema.ensure_schema(conn)
        live = versions.live_version(conn)
    yield
    with database.connect() as conn:
        schema.ensure_schema(conn)
        revocation.judge(conn, revocation.allowed_acls(load_sources(fixture_sources)))
        if live and versions.live_version(conn) != live:
            versions.switch_live(conn, live)
