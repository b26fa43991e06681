"""Re-ranking the first hits by how much of the query their own text holds."""

from __future__ import annotations

from lectio.retrieval.rerank import COLUMNS, by_query_share


def row(chunk_id: str, text: str, answer_span=None) -> tuple:
    values = dict.fromkeys(COLUMNS)
    values.update(chunk_id=chunk_id, text=text, answer_span=answer_span)
    return tuple(values[c] for c in COLUMNS)


QUERY = "I can do all things through Christ who strengthens me"


def test_a_verse_holding_the_whole_quotation_passes_a_slightly_better_fused_hit():
    hits = [(row("1pet_5_10", "the God of all grace will perfect, establish, strengthen you"), 0.046),
            (row("phil_4_13", "I can do all things through Christ, who strengthens me."), 0.045)]
    assert [r[0] for r, _ in by_query_share(hits, QUERY, 0.2, 10)] == ["phil_4_13", "1pet_5_10"]


def test_only_the_hits_own_text_counts_not_its_neighbours():
    context = "I can do all things through Christ, who strengthens me. "
    paragraph = row("phil_4_14_15", context + "However you did well that you shared in my affliction.",
                    answer_span=[len(context), len(context) + 54])
    hits = [(row("other", "strengthens the weak"), 0.046), (paragraph, 0.045)]
    assert [r[0] for r, _ in by_query_share(hits, QUERY, 0.2, 10)] == ["other", "phil_4_14_15"]


def test_hits_past_the_depth_and_queries_without_content_words_keep_their_order():
    hits = [(row("a", "nothing alike"), 0.05), (row("b", "nothing"), 0.04),
            (row("c", "I can do all things through Christ who strengthens me"), 0.039)]
    assert [r[0] for r, _ in by_query_share(hits, QUERY, 0.2, 2)] == ["a", "b", "c"]
    assert by_query_share(hits, "the of and", 1.0, 10) == hits
