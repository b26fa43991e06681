import pytest

from lectio.bible.books import BOOKS
from lectio.bible.refs import (
    END_OF_CHAPTER,
    Ref,
    RefRange,
    UnknownReference,
    find_references,
    parse_reference,
)


def spans(text):
    """(start id, end id) for each range `text` parses to."""
    return [(r.start.id, r.end.id) for r in parse_reference(text)]


def test_ref_id_ordinal_and_label():
    ref = Ref("rom", 8, 28)
    assert ref.id == "rom_8_28"
    assert ref.ordinal == 45_008_028
    assert ref.label == "Romans 8:28"
    assert Ref("phlm", 1, 6).label == "Philemon 6"


@pytest.mark.parametrize(
    "ref_id", ["rom_8_28", "1pet_5_7", "ps_23_1", "song_2_4", "phlm_1_6", "3john_1_4"]
)
def test_design_ids_round_trip(ref_id):
    assert Ref.from_id(ref_id).id == ref_id


def test_from_id_round_trip_for_every_book():
    for book in BOOKS:
        ref = Ref(book.id, book.chapters, 1)
        assert Ref.from_id(ref.id) == ref
        assert Ref.from_ordinal(ref.ordinal) == ref


@pytest.mark.parametrize("bad", ["rom-8-28", "rom_8", "Rom_8_28", "", "rom_8_28_1", "rom_a_1"])
def test_from_id_rejects_malformed_ids(bad):
    with pytest.raises(ValueError, match="malformed verse id"):
        Ref.from_id(bad)


def test_from_id_rejects_unknown_book_and_chapter():
    with pytest.raises(UnknownReference, match="unknown book id 'hez'"):
        Ref.from_id("hez_3_4")
    with pytest.raises(UnknownReference, match="there is no Romans 17"):
        Ref.from_id("rom_17_1")


def test_ordinals_sort_canonically():
    ids = ["rev_22_21", "exod_1_1", "gen_1_1", "gen_1_2", "gen_2_1", "matt_1_1", "mal_4_6"]
    refs = [Ref.from_id(i) for i in ids]
    expected = ["gen_1_1", "gen_1_2", "gen_2_1", "exod_1_1", "mal_4_6", "matt_1_1", "rev_22_21"]
    assert [r.id for r in sorted(refs, key=lambda r: r.ordinal)] == expected
    assert [r.id for r in sorted(refs)] == expected
    gen, exod, rev = (Ref.from_id(i).ordinal for i in ("gen_1_1", "exod_1_1", "rev_22_21"))
    assert gen < exod < rev


def test_ref_range_ordinals_and_membership():
    chapter = RefRange(Ref("rom", 5, 1), Ref("rom", 5, END_OF_CHAPTER))
    assert chapter.start_ordinal == 45_005_001
    assert chapter.end_ordinal == 45_005_999
    assert Ref("rom", 5, 21) in chapter
    assert Ref("rom", 6, 1) not in chapter
    with pytest.raises(UnknownReference, match="backwards"):
        RefRange(Ref("rom", 8, 30), Ref("rom", 8, 28))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Romans 5:1", [("rom_5_1", "rom_5_1")]),
        ("Rom 5:1", [("rom_5_1", "rom_5_1")]),
        ("Rom. 5:1", [("rom_5_1", "rom_5_1")]),
        ("romans 5:1", [("rom_5_1", "rom_5_1")]),
        ("  Romans 5:1 ", [("rom_5_1", "rom_5_1")]),
        ("Romans 5", [("rom_5_1", "rom_5_999")]),
        ("Romans ch. 5", [("rom_5_1", "rom_5_999")]),
        ("Romans 5-6", [("rom_5_1", "rom_6_999")]),
        ("Romans 5:1-5", [("rom_5_1", "rom_5_5")]),
        ("Rom 8:28-30", [("rom_8_28", "rom_8_30")]),
        ("Rom 8:28\u201330", [("rom_8_28", "rom_8_30")]),
        ("Rom 8:28\u201430", [("rom_8_28", "rom_8_30")]),
        ("Rom 8:38-9:2", [("rom_8_38", "rom_9_2")]),
        ("1 Pet 5:7", [("1pet_5_7", "1pet_5_7")]),
        ("1Pet 5:7", [("1pet_5_7", "1pet_5_7")]),
        ("I Peter 5:7", [("1pet_5_7", "1pet_5_7")]),
        ("First Peter 5:7", [("1pet_5_7", "1pet_5_7")]),
        ("Jn 3:16", [("john_3_16", "john_3_16")]),
        ("John 3:16", [("john_3_16", "john_3_16")]),
        ("1 John 4:8", [("1john_4_8", "1john_4_8")]),
        ("Philemon 6", [("phlm_1_6", "phlm_1_6")]),
        ("Phlm 1:6", [("phlm_1_6", "phlm_1_6")]),
        ("Jude 3", [("jude_1_3", "jude_1_3")]),
        ("Jude 3-5", [("jude_1_3", "jude_1_5")]),
        ("3 John 4", [("3john_1_4", "3john_1_4")]),
        ("Obad 1", [("obad_1_1", "obad_1_1")]),
        ("Song of Songs 2:4", [("song_2_4", "song_2_4")]),
        ("Song of Solomon 2:4", [("song_2_4", "song_2_4")]),
        ("Ps 23", [("ps_23_1", "ps_23_999")]),
        ("Psalm 23:1", [("ps_23_1", "ps_23_1")]),
        ("Gen 1:1-2:3", [("gen_1_1", "gen_2_3")]),
        ("1 Ch 5:1", [("1chr_5_1", "1chr_5_1")]),
        ("Revelations 22:21", [("rev_22_21", "rev_22_21")]),
        ("John 3:16; Rom 5:8", [("john_3_16", "john_3_16"), ("rom_5_8", "rom_5_8")]),
        ("John 3:16, Rom 5:8", [("john_3_16", "john_3_16"), ("rom_5_8", "rom_5_8")]),
        ("Rom 5:1, 8", [("rom_5_1", "rom_5_1"), ("rom_5_8", "rom_5_8")]),
        ("Romans 5:1-5,8", [("rom_5_1", "rom_5_5"), ("rom_5_8", "rom_5_8")]),
        ("Rom 5:1, 8-10", [("rom_5_1", "rom_5_1"), ("rom_5_8", "rom_5_10")]),
        ("Rom 5:1; 8:28", [("rom_5_1", "rom_5_1"), ("rom_8_28", "rom_8_28")]),
        ("Rom 5:1; 8", [("rom_5_1", "rom_5_1"), ("rom_8_1", "rom_8_999")]),
        ("Ps 23, 24", [("ps_23_1", "ps_23_999"), ("ps_24_1", "ps_24_999")]),
        ("Jude 3, 5", [("jude_1_3", "jude_1_3"), ("jude_1_5", "jude_1_5")]),
    ],
)
def test_parse_reference_forms(text, expected):
    assert spans(text) == expected


@pytest.mark.parametrize(
    "text, label",
    [
        ("rom 8:28", "Romans 8:28"),
        ("Rom 8:28\u201330", "Romans 8:28-30"),
        ("Romans 5", "Romans 5"),
        ("Romans 5-6", "Romans 5-6"),
        ("Rom 8:38-9:2", "Romans 8:38-9:2"),
        ("phm 6", "Philemon 6"),
        ("Jude 3-5", "Jude 3-5"),
        ("song of solomon 2:4", "Song of Songs 2:4"),
    ],
)
def test_labels(text, label):
    [ref_range] = parse_reference(text)
    assert ref_range.label == label
    assert parse_reference(label) == [ref_range]


@pytest.mark.parametrize(
    "text",
    [
        "do not be anxious about anything",
        "grace",
        "John the Baptist",
        "John",
        "",
        "   ",
        "5:1",
        "in 2 weeks",
        "covid 19",
        "top 10 verses",
        "what does John 3:16 mean",
        "Romans 5, and more",
        "grace, mercy",
    ],
)
def test_non_references_return_none(text):
    assert parse_reference(text) is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("Romans 17:1", "Romans has 16 chapters; there is no Romans 17"),
        ("Romans 17", "there is no Romans 17"),
        ("Romans 5:0", "verse 0"),
        ("Jude 2:1", "Jude has 1 chapter; there is no Jude 2"),
        ("Hezekiah 3:4", "unknown book 'Hezekiah'"),
        ("John 3:16; Hezekiah 3:4", "unknown book 'Hezekiah'"),
        ("Rom 8:30-28", "backwards"),
    ],
)
def test_impossible_references_raise(text, message):
    with pytest.raises(UnknownReference, match=message):
        parse_reference(text)


def test_unknown_reference_is_a_value_error():
    assert issubclass(UnknownReference, ValueError)


def test_find_references_in_prose():
    found = find_references("as Paul says in Rom. 8:28-30 and 1 Cor 13:4")
    assert [(r.start.id, r.end.id) for r in found] == [
        ("rom_8_28", "rom_8_30"),
        ("1cor_13_4", "1cor_13_4"),
    ]


def test_find_references_handles_lists_and_single_chapter_books():
    text = (
        "compare Rom 8:28, 29 with 2 Cor 5:17; "
        "see also Jude 3 and Philemon 6 (cf. Song of Songs 2:4)."
    )
    labels = [r.label for r in find_references(text)]
    assert labels == [
        "Romans 8:28",
        "Romans 8:29",
        "2 Corinthians 5:17",
        "Jude 3",
        "Philemon 6",
        "Song of Songs 2:4",
    ]


def test_find_references_avoids_false_positives():
    assert find_references("in 2 weeks we read Job 5 and Mark 5 at 10:30, verses 14-19") == []
    assert find_references("Romans 17:1 is not a verse") == []
