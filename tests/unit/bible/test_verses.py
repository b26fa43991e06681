"""Expanding reference ranges with real verse counts."""

from lectio.bible.refs import find_references
from lectio.bible.verses import cited_verse_ids, verse_ids


def test_ranges_expand_with_real_verse_counts():
    # Romans 5 has 21 verses, so the range crosses into chapter 6 without inventing 5:22.
    assert verse_ids(find_references("see Rom 5:20-6:2")) == ("rom_5_20", "rom_5_21", "rom_6_1", "rom_6_2")
    # A verse no versification has is not a reference.
    assert verse_ids(find_references("Rom 3:40")) == ()
    # A vast range keeps its ends rather than hundreds of ids.
    assert verse_ids(find_references("Gen 1:1-50:26")) == ("gen_1_1", "gen_50_26")


def test_cited_verse_ids_are_canonical_and_unique():
    assert cited_verse_ids("Eph 2:9, then Rom. 5:12 and again Eph 2:8-9") == ("rom_5_12", "eph_2_8", "eph_2_9")
