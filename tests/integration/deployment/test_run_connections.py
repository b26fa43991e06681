"""A `lectio run` talks to Dagster's storage over a connection it keeps: Dagster's PostgreSQL
storage opens one per call by default, and a run over 30 one-paragraph sources opened about
7,000 (a quarter of its time; pipelines.home.executing_instance)."""

from __future__ import annotations

import psycopg
import pytest

from lectio.index.database import DAGSTER_DATABASE
from pipelines.runners import run_main

pytestmark = [pytest.mark.slow]

SOURCES = 12


def _write_sources() -> str:
    return "sources:\n" + "".join(
        f"  - {{id: note-{i}, kind: document, format: text, path: note-{i}.txt, acl: [public]}}\n" for i in range(SOURCES))


def _sessions(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s", (DAGSTER_DATABASE,)).fetchone()[0]


def test_a_run_keeps_its_storage_connections_instead_of_one_per_event(home_factory):
    with home_factory("lectio-connections-", _write_sources) as home:
        for i in range(SOURCES):
            (home.folder / f"note-{i}.txt").write_text(f"Note {i}\n\nThe hall is open on day {i} of the month.\n")
        before = _sessions(home.database.url)
        report = run_main(home.settings, echo=lambda _: None)
        assert not report.failed and report.index["ok"]
        opened = _sessions(home.database.url) - before
        # A connection per call was 2,858 here (238 a source); kept, 141. The few per source left
        # are the pool's overflow, closed when two calls overlap (Dagster's setting keeps one).
        assert opened < 25 * SOURCES, opened
