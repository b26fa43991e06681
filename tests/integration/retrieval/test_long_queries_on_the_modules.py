"""The committed long-passage set rebuilt from the real Matthew Henry and World English Bible
modules (downloaded on first use): the builder reproduces it byte for byte, and every passage is
a real comment's words (the builder's offline parts: tests/unit/evaluation/test_long_queries.py)."""

from pathlib import Path

import pytest

from lectio.evaluation import long_queries
from lectio.evaluation.querysets import load_queries, part_of

pytestmark = pytest.mark.network

COMMITTED = Path(__file__).resolve().parents[3] / "data" / "queries" / "long_passages.jsonl"


def test_the_builder_reproduces_the_committed_set_exactly(settings, tmp_path):
    out = tmp_path / "long_passages.jsonl"
    assert long_queries.main(["--out", str(out), "--corpus-dir", str(settings.corpus_dir)]) == 0
    assert out.read_bytes() == COMMITTED.read_bytes()


def test_each_passage_is_cut_from_the_comment_on_its_verses(settings):
    units, _ = long_queries.read_units(settings.corpus_dir)
    by_id = {}
    for unit in units:
        if unit.scope == "verses":
            by_id.setdefault(long_queries.query_id(unit), " ".join(unit.paragraphs))
    queries = load_queries(COMMITTED)
    assert len(queries) == long_queries.LIMIT and {part_of(q.id) for q in queries} == {"dev", "test"}
    for query in queries:
        assert query.query in by_id[query.id], query.id
        assert query.filters == {"kind": "scripture"}
        assert not any(ch.isdigit() for ch in query.query), query.id
