"""The retrieval metrics (recall@k, precision@5, MRR, nDCG@10, negative recall, qualifier presence,
budget recall), on hand-computed cases."""

import math
import time
from dataclasses import dataclass

import pytest

from lectio.evaluation.metrics import LabelledQuery, evaluate, score_query


@dataclass
class Hit:
    refs: tuple
    text: str = "x"


def q(relevant, **kw):
    return LabelledQuery(id="q", query="q", relevant=frozenset(relevant), **kw)


def test_recall_precision_mrr_ndcg():
    hits = [Hit(("a",)), Hit(("b", "c")), Hit(("z",)), Hit(("d",)), Hit(("y",)), Hit(("e",))]
    s = score_query(q({"b", "c", "d", "e", "f"}), hits)
    assert s["recall@5"] == pytest.approx(3 / 5)  # b, c (one pericope-like hit) and d
    assert s["recall@10"] == pytest.approx(4 / 5)
    assert s["precision@5"] == pytest.approx(2 / 5)
    assert s["mrr"] == pytest.approx(1 / 2)
    dcg = 1 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(7)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, 6))
    assert s["ndcg@10"] == pytest.approx(dcg / ideal)
    assert s["negative_recall"] is None and s["qualifier_presence"] is None


def test_no_relevant_hit_scores_zero():
    s = score_query(q({"a"}), [Hit(("b",))])
    assert s["mrr"] == 0 and s["recall@20"] == 0 and s["ndcg@10"] == 0


def test_negative_recall_looks_at_the_top_10_only():
    hits = [Hit((f"r{i}",)) for i in range(12)]
    assert score_query(q({"r0"}, should_not_appear=frozenset({"r11"})), hits)["negative_recall"] == 1.0
    assert score_query(q({"r0"}, should_not_appear=frozenset({"r9"})), hits)["negative_recall"] == 0.0


def test_qualifier_presence_needs_every_string():
    hits = [Hit(("a",), "Give us today our Daily Bread."), Hit(("b",), "Forgive us our debts")]
    assert score_query(q({"a"}, must_include_text=("daily bread", "debts")), hits)["qualifier_presence"] == 1.0
    assert score_query(q({"a"}, must_include_text=("daily bread", "kingdom")), hits)["qualifier_presence"] == 0.0


def test_budget_recall_stops_before_the_budget_is_passed():
    long_text = "word " * 600  # 600 word pieces
    hits = [Hit(("a",), long_text), Hit(("b",), long_text), Hit(("c",), "short")]
    s = score_query(q({"a", "b", "c"}), hits)
    # a fits (600); b would pass 1,000, so the budget stops there even though c is short.
    assert s["budget_recall@1000"] == pytest.approx(1 / 3)
    assert s["recall@5"] == 1.0


def test_overall_averages_over_queries_defining_each_metric():
    queries = [q({"a"}), LabelledQuery(id="n", query="n", relevant=frozenset(), should_not_appear=frozenset({"a"}))]
    report = evaluate(queries, lambda query: [Hit(("a",))])
    assert report["overall"]["recall@5"] == 1.0  # the second query defines no recall
    assert report["overall"]["negative_recall"] == 0.0
    assert report["overall"]["n"] == 2


def test_ndcg_counts_a_relevant_verse_once():
    # A verse, its paragraph and its pericope all cover the one relevant verse: one gain, not three.
    hits = [Hit(("a",)), Hit(("a", "b")), Hit(("a", "b", "c"))]
    s = score_query(q({"a"}), hits)
    assert s["ndcg@10"] == pytest.approx(1.0)
    later = score_query(q({"a", "c"}), [Hit(("x",)), Hit(("a",)), Hit(("a",)), Hit(("c",))])
    assert later["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))


def test_an_evaluation_reports_the_speed_of_its_searches():
    queries = [LabelledQuery(id=str(i), query="q", relevant=frozenset({"rom_8_28"})) for i in range(5)]

    def slow(q):
        time.sleep(0.01)
        return []

    latency = evaluate(queries, slow, 20)["overall"]["latency_ms"]
    assert set(latency) == {"p50", "p95", "max"}
    assert 10 <= latency["p50"] <= latency["p95"] <= latency["max"]
