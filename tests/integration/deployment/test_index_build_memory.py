"""The HNSW build's memory (lectio.index.indexes.create): at least 512 MB, and never less than the
server, database or role gives it, so an operator can size a large corpus's graph (docs/scale.md)."""

from __future__ import annotations

import pytest

from lectio.index import indexes


@pytest.mark.parametrize(("configured", "built_with"), [("64MB", "512MB"), ("2GB", "2GB")])
def test_the_build_keeps_a_larger_setting(conn, configured, built_with):
    conn.execute(f"SET maintenance_work_mem = '{configured}'")
    with conn.transaction(force_rollback=True):
        conn.execute("CREATE TABLE scale_probe (chunk_id text PRIMARY KEY, embedding vector(3), tsv tsvector, "
                      "refs text[], acl text[], ordinal int8, title_words text[], granularity text, "
                      "metadata jsonb, kind text)")
        indexes.create(conn, "scale_probe")
        assert conn.execute("SHOW maintenance_work_mem").fetchone()[0] == built_with
    conn.execute("RESET maintenance_work_mem")
