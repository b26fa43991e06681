"""Plain designs scored beside lectio on the same index version and queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lectio.embedding.model import Embedder
from lectio.evaluation.baselines import BASELINES, Baselines, query_terms
from lectio.evaluation.metrics import METRICS, evaluate_index
from lectio.evaluation.querysets import load_queries
from lectio.index import versions
from cli import main as cli

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUERIES = Path(__file__).resolve().parents[2] / "fixtures" / "queries" / "migration.jsonl"


def test_each_baseline_answers_from_the_verses_of_the_version(main_run, conn):
    plain = Baselines(conn, versions.live_version(conn), Embedder())
    query = "in nothing be anxious, but in everything by prayer and petition with thanksgiving"
    terms = query_terms(conn, query)
    assert "anxious" in terms and "in" not in terms  # stemmed and stopped as the verses were
    for name in ("verse-vector", "verse-bm25", "verse-hybrid"):
        hits = plain.retrieve(name, query, terms, 5)
        assert hits[0].refs == ("phil_4_6",), name
    chapter = plain.retrieve("chapter-vector", query, terms, 3)[0]
    assert "phil_4_6" in chapter.refs and chapter.refs[0] == "phil_4_1" and len(chapter.refs) == 23
    # A word no verse holds scores nothing rather than everything.
    assert plain.retrieve("verse-bm25", "quillwort", query_terms(conn, "quillwort"), 5) == []


def test_eval_reports_the_baselines_beside_lectio(main_run, conn, capsys):
    report = evaluate_index(conn, load_queries(QUERIES), baselines=True)
    assert set(report["baselines"]) == set(BASELINES)
    for overall in report["baselines"].values():
        # Every metric beside lectio's; how many queries lectio's search cut is its own count.
        assert set(overall) == set(report["overall"]) - {"queries_cut"} and overall["n"] == report["overall"]["n"]
        assert all(overall[m] is None or 0 <= overall[m] <= 1 for m in METRICS)
    capsys.readouterr()
    assert cli(["eval", str(QUERIES), "--baselines", "--part", "test", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["part"] == "test" and set(printed["baselines"]) == set(BASELINES)
