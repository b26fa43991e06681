"""A passage longer than a page follows the shorter hits of the page, and a part of it found
further down takes its place."""

from __future__ import annotations

from lectio.retrieval.rerank import COLUMNS, collapse_covered, long_passages_last, pack_page


def row(chunk_id: str, refs: list[str], words: int, kind: str = "scripture") -> tuple:
    values = dict.fromkeys(COLUMNS)
    values.update(chunk_id=chunk_id, kind=kind, refs=refs, translation="KJV", text=" ".join(["the"] * words))
    return tuple(values[c] for c in COLUMNS)


def ids(hits) -> list[str]:
    return [r[0] for r, _ in hits]


PERICOPE = row("lev_13", [f"lev_13_{n}" for n in range(1, 47)], 1500)
VERSE = row("lev_13_8", ["lev_13_8"], 30)
OTHER = row("lev_14_3", ["lev_14_3"], 30)


def test_a_passage_past_the_page_follows_the_shorter_hits_within_the_page_only():
    hits = [(PERICOPE, 0.04), (OTHER, 0.01), (row("num_19_1", ["num_19_1"], 30), 0.009)]
    assert ids(long_passages_last(hits, 1000, 2)) == ["lev_14_3", "lev_13", "num_19_1"]
    assert long_passages_last(hits, 2000, 3) == hits


def test_its_best_part_further_down_takes_its_place_and_survives_collapsing():
    hits = [(PERICOPE, 0.04), (OTHER, 0.011), (VERSE, 0.010)]
    shaped = long_passages_last(hits, 1000, 3, parts=True)
    assert ids(shaped) == ["lev_13_8", "lev_13", "lev_14_3"]
    assert shaped[0][1] == 0.04  # the part takes the passage's score with its place
    page = long_passages_last(collapse_covered(shaped), 1000, 3)
    assert ids(page) == ["lev_13_8", "lev_14_3", "lev_13"]


def test_a_part_must_be_scripture_of_the_same_translation_inside_the_passage():
    commentary = row("comment", ["lev_13_8"], 30, kind="commentary")
    elsewhere = row("deut_14_8", ["deut_14_8"], 30)
    hits = [(PERICOPE, 0.04), (commentary, 0.02), (elsewhere, 0.01)]
    assert ids(long_passages_last(hits, 1000, 3, parts=True)) == ["lev_13", "comment", "deut_14_8"]


def test_a_page_holds_the_hits_that_fit_in_rank_order_the_others_follow():
    paragraph, verse, later = row("ps_23", ["ps_23_1"], 700), row("ps_23_4", ["ps_23_4"], 30), row("x", ["x_1"], 300)
    hits = [(VERSE, 0.05), (later, 0.04), (paragraph, 0.03), (verse, 0.02)]
    # 30 + 300 fit; the 700-piece paragraph would pass 1,000, so the verse after it comes first.
    assert ids(pack_page(hits, 1000)) == ["lev_13_8", "x", "ps_23_4", "ps_23"]
    assert pack_page(hits, 2000) == hits


def test_commentary_on_verses_already_listed_follows_the_rest():
    commentary = row("comment", ["lev_13_8"], 30, kind="commentary")
    fresh = row("fresh", ["lev_14_3"], 30, kind="commentary")
    hits = [(VERSE, 0.04), (commentary, 0.03), (fresh, 0.02), (OTHER, 0.01)]
    assert ids(collapse_covered(hits, commentary_later=True)) == ["lev_13_8", "fresh", "lev_14_3", "comment"]
    assert ids(collapse_covered(hits)) == ["lev_13_8", "comment", "fresh", "lev_14_3"]
