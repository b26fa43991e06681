"""Re-ranking the first hits by how much of the query their own text holds."""

from __future__ import annotations

from lectio.retrieval.hits import Hit
from lectio.retrieval.query_share import by_query_share


def hit(chunk_id: str, text: str, score: float, answer_span=None) -> Hit:
    return Hit(chunk_id, score, text=text, answer_span=answer_span)


QUERY = "I can do all things through Christ who strengthens me"


def test_a_verse_holding_the_whole_quotation_passes_a_slightly_better_fused_hit():
    hits = [hit("1pet_5_10", "the God of all grace will perfect, establish, strengthen you", 0.046),
            hit("phil_4_13", "I can do all things through Christ, who strengthens me.", 0.045)]
    assert [h.chunk_id for h in by_query_share(hits, QUERY, 0.2, 10)] == ["phil_4_13", "1pet_5_10"]


def test_only_the_hits_own_text_counts_not_its_neighbours():
    context = "I can do all things through Christ, who strengthens me. "
    paragraph = hit("phil_4_14_15", context + "However you did well that you shared in my affliction.", 0.045,
                    answer_span=[len(context), len(context) + 54])
    hits = [hit("other", "strengthens the weak", 0.046), paragraph]
    assert [h.chunk_id for h in by_query_share(hits, QUERY, 0.2, 10)] == ["other", "phil_4_14_15"]


def test_hits_past_the_depth_and_queries_without_content_words_keep_their_order():
    hits = [hit("a", "nothing alike", 0.05), hit("b", "nothing", 0.04),
            hit("c", "I can do all things through Christ who strengthens me", 0.039)]
    assert [h.chunk_id for h in by_query_share(hits, QUERY, 0.2, 2)] == ["a", "b", "c"]
    assert by_query_share(hits, "the of and", 1.0, 10) == hits
