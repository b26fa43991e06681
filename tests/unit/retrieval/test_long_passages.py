"""A passage longer than a page follows the shorter hits of the page, and a part of it found
further down takes its place."""

from __future__ import annotations

from dataclasses import replace

from lectio.retrieval.collapse import collapse_covered
from lectio.retrieval.hits import Hit
from lectio.retrieval.long_passages import long_passages_last, pack_page


def hit(chunk_id: str, refs: list[str], words: int, kind: str = "scripture") -> Hit:
    return Hit(chunk_id, 0.0, kind=kind, refs=refs, translation="KJV", text=" ".join(["the"] * words))


def scored(hit: Hit, score: float) -> Hit:
    return replace(hit, score=score)


def ids(hits) -> list[str]:
    return [hit.chunk_id for hit in hits]


PERICOPE = hit("lev_13", [f"lev_13_{n}" for n in range(1, 47)], 1500)
VERSE = hit("lev_13_8", ["lev_13_8"], 30)
OTHER = hit("lev_14_3", ["lev_14_3"], 30)


def test_a_passage_past_the_page_follows_the_shorter_hits_within_the_page_only():
    hits = [scored(PERICOPE, 0.04), scored(OTHER, 0.01), scored(hit("num_19_1", ["num_19_1"], 30), 0.009)]
    assert ids(long_passages_last(hits, 1000, 2)) == ["lev_14_3", "lev_13", "num_19_1"]
    assert long_passages_last(hits, 2000, 3) == hits


def test_its_best_part_further_down_takes_its_place_and_survives_collapsing():
    hits = [scored(PERICOPE, 0.04), scored(OTHER, 0.011), scored(VERSE, 0.010)]
    shaped = long_passages_last(hits, 1000, 3, parts=True)
    assert ids(shaped) == ["lev_13_8", "lev_13", "lev_14_3"]
    assert shaped[0].score == 0.04  # the part takes the passage's score with its place
    page = long_passages_last(collapse_covered(shaped), 1000, 3)
    assert ids(page) == ["lev_13_8", "lev_14_3", "lev_13"]


def test_a_part_must_be_scripture_of_the_same_translation_inside_the_passage():
    commentary = hit("comment", ["lev_13_8"], 30, kind="commentary")
    elsewhere = hit("deut_14_8", ["deut_14_8"], 30)
    hits = [scored(PERICOPE, 0.04), scored(commentary, 0.02), scored(elsewhere, 0.01)]
    assert ids(long_passages_last(hits, 1000, 3, parts=True)) == ["lev_13", "comment", "deut_14_8"]


def test_a_page_holds_the_hits_that_fit_in_rank_order_the_others_follow():
    paragraph, verse, later = hit("ps_23", ["ps_23_1"], 700), hit("ps_23_4", ["ps_23_4"], 30), hit("x", ["x_1"], 300)
    hits = [scored(VERSE, 0.05), scored(later, 0.04), scored(paragraph, 0.03), scored(verse, 0.02)]
    # 30 + 300 fit; the 700-piece paragraph would pass 1,000, so the verse after it comes first.
    assert ids(pack_page(hits, 1000)) == ["lev_13_8", "x", "ps_23_4", "ps_23"]
    assert pack_page(hits, 2000) == hits


def test_commentary_on_verses_already_listed_follows_the_rest():
    commentary = hit("comment", ["lev_13_8"], 30, kind="commentary")
    fresh = hit("fresh", ["lev_14_3"], 30, kind="commentary")
    hits = [scored(VERSE, 0.04), scored(commentary, 0.03), scored(fresh, 0.02), scored(OTHER, 0.01)]
    assert ids(collapse_covered(hits, commentary_later=True)) == ["lev_13_8", "fresh", "lev_14_3", "comment"]
    assert ids(collapse_covered(hits)) == ["lev_13_8", "comment", "fresh", "lev_14_3"]
