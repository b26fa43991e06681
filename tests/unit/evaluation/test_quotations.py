"""The near-quotation set: drawn by seed, each query a way of quoting its verse, and the verse's
near-identical parallels relevant beside it."""

import random

from lectio.evaluation.querysets import part_of
from lectio.evaluation.quotations import MIN_WORDS, Verse, build_quotation_queries, quote

WEB = {
    "ps_14_1": "The fool has said in his heart, There is no God. They are corrupt; they have done abominable works.",
    "ps_53_1": "The fool has said in his heart, There is no God. They are corrupt, and have done abominable iniquity.",
    "phil_4_13": "I can do all things through Christ, who strengthens me.",
    "john_11_35": "Jesus wept.",
    "gen_1_1": "In the beginning, God created the heavens and the earth.",
}
KJV = {
    "ps_14_1": "The fool hath said in his heart, There is no God. They are corrupt, they have done abominable works.",
    "ps_53_1": "The fool hath said in his heart, There is no God. Corrupt are they, and have done abominable iniquity.",
    "phil_4_13": "I can do all things through Christ which strengtheneth me.",
    "john_11_35": "Jesus wept.",
    "gen_1_1": "In the beginning God created the heaven and the earth.",
}


def test_the_draw_is_fixed_by_its_seed_and_skips_verses_too_short_to_quote():
    first, again = (build_quotation_queries(WEB, KJV, 4, seed=7) for _ in range(2))
    assert first == again and len({r["id"] for r in first}) == 4
    assert all(not r["id"].startswith("quote-john_11_35") for r in first)
    assert {part_of(r["id"]) for r in build_quotation_queries(WEB, KJV, 4, seed=1)} <= {"dev", "test"}


def test_a_parallel_with_nearly_the_same_words_is_relevant_beside_the_verse():
    by_verse = {r["relevant"][0]: r["relevant"] for r in build_quotation_queries(WEB, KJV, 4, seed=3)}
    assert by_verse["ps_14_1"] == ["ps_14_1", "ps_53_1"]
    assert by_verse["phil_4_13"] == ["phil_4_13"]


def test_each_way_of_quoting_keeps_the_verse_recognisable():
    verse = Verse("phil_4_13", WEB["phil_4_13"], KJV["phil_4_13"])
    rng = random.Random(0)
    assert quote(verse, "whole", "KJV", rng) == KJV["phil_4_13"]
    assert quote(verse, "first-half", "WEB", rng) == "I can do all things"
    assert quote(verse, "last-half", "WEB", rng) == "through Christ who strengthens me"
    assert quote(verse, "mixed", "WEB", rng) == "I can do all things through Christ which strengtheneth me"
    assert len(quote(verse, "dropped", "WEB", rng).split()) >= MIN_WORDS
