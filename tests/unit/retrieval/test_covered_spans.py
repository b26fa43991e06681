"""Where a filtered search looks for the passage a hit of another kind speaks for: one short span
of verse ordinals per run of the hit's verses (lectio.retrieval.evidence._spans)."""

from lectio.bible.refs import Ref
from lectio.retrieval.evidence import _spans


def test_a_run_of_verses_is_one_span_from_the_chapter_before_it():
    (span,) = _spans(["matt_11_28", "matt_11_29", "matt_11_30"])
    assert span == (Ref("matt", 10, 1).ordinal - 1, Ref("matt", 11, 30).ordinal)


def test_proof_texts_far_apart_are_spans_of_their_own_not_the_bible_between():
    spans = _spans(["rom_3_28", "gen_15_6", "gal_2_16", "rom_4_5"])
    assert spans == [(Ref("gen", 14, 1).ordinal - 1, Ref("gen", 15, 6).ordinal),
                     (Ref("rom", 2, 1).ordinal - 1, Ref("rom", 4, 5).ordinal),
                     (Ref("gal", 1, 1).ordinal - 1, Ref("gal", 2, 16).ordinal)]
    assert sum(hi - lo for lo, hi in spans) < 10_000  # a few chapters, not whole books


def test_refs_that_name_no_verse_give_no_span():
    assert _spans(["G26"]) == [] and _spans([]) == []
