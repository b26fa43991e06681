"""Fusion keeps what both primary retrievers agree on: a quoted verse that the vector and the
lexical side both rank first stays first, though the citation prior favours a much-cited passage.
Two mechanisms keep it there, each alone: fusion that weighs scores, and the re-ranking of the
first hits by how much of the query their own text holds."""

import pytest

from lectio.retrieval import SearchConfig, SearchRequest, search

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUOTE = "I can do all things through Christ who strengthens me"


def first(conn, **settings) -> str:
    return search(conn, SearchRequest(QUOTE, k=5, config=SearchConfig.from_options(**settings))).results[0].chunk_id


def test_a_quoted_verse_both_sides_rank_first_stays_first(main_run, conn):
    assert first(conn, mode="vector") == first(conn, mode="lexical") == "phil_4_13_web"
    # By ranks alone, Romans 8:31-39 (cited by the commentary in the fixture corpus) outranks it.
    assert first(conn, fusion_score_power=0.0, query_share_weight=0.0) != "phil_4_13_web"
    assert first(conn, query_share_weight=0.0) == "phil_4_13_web"
    assert first(conn, fusion_score_power=0.0) == "phil_4_13_web"
    assert first(conn) == "phil_4_13_web"
