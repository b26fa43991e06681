"""parse_verse on markup copied from the WEB (engWEB2015eb) and KJV (engKJV2006eb) SWORD
modules, and assign_pericopes on a tiny table. No module files are needed."""


from lectio.bible.pericopes import Pericope, assign_pericopes, verse_id
from lectio.readers.sword_bible import MAX_VERSE_CHARS, parse_verse

PREVERSE_OPEN = '<div type="x-milestone" subType="x-preverse" sID="pv1"/>'
PREVERSE_CLOSE = '<div type="x-milestone" subType="x-preverse" eID="pv1"/>'

WEB_GEN_1_1 = (
    '<w lemma="strong:H0430">In</w> <w lemma="strong:H0853">the</w> '
    '<w lemma="strong:H7225">beginning</w>, <w lemma="strong:H0430">God</w>'
    '<note placement="foot"><reference type="annotateRef">1:1 </reference>The Hebrew word '
    "rendered “God” is “אֱלֹהִ֑ים” (Elohim).</note>"
    '<w lemma="strong:H1254">created</w> <w lemma="strong:H0853">the</w> '
    '<w lemma="strong:H8064">heavens</w> <w lemma="strong:H0430">and</w> '
    '<w lemma="strong:H0853">the</w> <w lemma="strong:H0776">earth</w>. '
)

WEB_GEN_1_2_END = (
    '<w lemma="strong:H4325">waters</w>. <div eID="gen25" type="x-p"/>'
)

WEB_GEN_1_3 = (
    PREVERSE_OPEN + '<div sID="gen26" type="x-p"/>' + PREVERSE_CLOSE
    + '<w lemma="strong:H0430">God</w> <w lemma="strong:H0559">said</w>, “'
    '<w lemma="strong:H1961">Let</w> <w lemma="strong:H1961">there</w> '
    '<w lemma="strong:H1961">be</w> <w lemma="strong:H0216">light</w>,” '
    '<w lemma="strong:H0430">and</w> <w lemma="strong:H1961">there</w> '
    '<w lemma="strong:H1961">was</w> <w lemma="strong:H0216">light</w>. '
)

# A paragraph that opens in the middle of the verse does not make the verse a paragraph start.
WEB_GEN_14_20 = (
    '<w lemma="strong:H3027">hand</w>.”<div eID="gen164" type="x-p"/> '
    '<div sID="gen165" type="x-p"/> Abram <w lemma="strong:H5414">gave</w> '
    '<w lemma="strong:H5414">him</w> a tenth of all. <div eID="gen165" type="x-p"/>'
)

WEB_JUDG_13_18_END = (
    'since <w lemma="strong:H1931">it</w> <w lemma="strong:H3068">is</w> incomprehensible'
    '<note placement="foot"><reference type="annotateRef">13:18 </reference>or, wonderful'
    '</note>?” <div eID="gen2870" type="x-p"/>'
)

WEB_LUKE_12_6 = (
    '<q marker="" who="Jesus">“Aren’t five sparrows sold for two assaria coins</q> '
    '<note placement="foot"><reference type="annotateRef">12:6 </reference>An assarion was a '
    'small copper coin.</note> <q marker="" who="Jesus">? Not one of them is forgotten by God. </q>'
)

WEB_PS_3_1 = (
    PREVERSE_OPEN + '<title canonical="true" type="psalm">A Psalm by David, when he fled from '
    'Absalom his son.</title> <lg sID="gen7860"/> <l level="1" sID="gen7861"/>' + PREVERSE_CLOSE
    + 'Yahweh, how <w lemma="strong:H1732">my</w> adversaries <w lemma="strong:H1121">have</w> '
    'increased!<l eID="gen7861" level="1"/> <l level="2" sID="gen7862"/>Many '
    '<w lemma="strong:H1121">are</w> those who rise up against me. <l eID="gen7862" level="2"/>'
)

WEB_SONG_1_2 = (
    PREVERSE_OPEN + '<speaker>Beloved</speaker> <lg sID="gen15617"/> '
    '<l level="1" sID="gen15618"/>' + PREVERSE_CLOSE
    + 'Let <w lemma="strong:H3588">him</w> kiss me with the kisses of his mouth;'
    '<l eID="gen15618" level="1"/>'
)

WEB_REV_22_21 = (
    PREVERSE_OPEN + '<div sID="gen35836" type="x-p"/>' + PREVERSE_CLOSE
    + '<w lemma="strong:G3956">The</w> <w lemma="strong:G5485">grace</w> of the '
    '<w lemma="strong:G2962">Lord</w> <w lemma="strong:G2424">Jesus</w> Christ be with all the '
    'saints. Amen.  <chapter eID="Rev.22"/><div eID="gen35836" type="x-p"/> '
    '<div canonical="true" eID="gen35575" osisID="Rev" type="book"/> '
    '<div sID="gen35837" type="glossary"/> <milestone n="Glossary" type="x-usfm-h"/> '
    '<title level="1" type="main">World English Bible Glossary</title> '
    '<div sID="gen35838" type="introduction"/> <div sID="gen35839" type="x-p"/> The following '
    "words used in the World English Bible (WEB) are not very common.<div eID=\"gen35839\" "
    'type="x-p"/> <list> <item subType="x-introduction" type="x-indent-1"><seg type="keyword">'
    "Abaddon</seg> Abaddon is Hebrew for destruction.</item> "
    + '<item subType="x-introduction" type="x-indent-1"><seg type="keyword">Abba</seg> Abba is a '
    "Chaldee word for father.</item> " * 60
    + '</list> <div eID="gen35838" type="introduction"/> <div eID="gen35837" type="glossary"/>'
)

KJV_GEN_1_6 = (
    PREVERSE_OPEN + '<div sID="gen5" type="x-p"/> ' + PREVERSE_CLOSE
    + '¶ And <w lemma="strong:H0430">God</w> <w lemma="strong:H0559">said</w>, Let there be a '
    '<w lemma="strong:H7549">firmament</w> in the <w lemma="strong:H8432">midst</w> of the '
    '<w lemma="strong:H4325">waters</w>.<note placement="foot"><reference type="annotateRef">1.6 '
    "</reference>firmament: Heb. expansion</note> "
)

KJV_GEN_2_4 = (
    '¶ <w lemma="strong:H0428">These</w> <transChange type="added">are</transChange> the '
    '<w lemma="strong:H8435">generations</w> of the <w lemma="strong:H8064">heavens</w>, in the '
    '<w lemma="strong:H3117">day</w> that the <divineName><w lemma="strong:H3068">LORD</w>'
    '</divineName> <w lemma="strong:H0430">God</w> <w lemma="strong:H6213">made</w> the '
    '<w lemma="strong:H0776">earth</w>, '
)

KJV_PS_1_4 = (
    PREVERSE_OPEN + '<lb type="x-p"/> <l level="1" sID="gen2585"/> ' + PREVERSE_CLOSE
    + 'The <w lemma="strong:H7563">ungodly</w> <transChange type="added">are</transChange> not '
    'so: but <transChange type="added">are</transChange> like the <w lemma="strong:H4671">chaff'
    '</w> which the <w lemma="strong:H7307">wind</w> driveth <w lemma="strong:H5086">away</w>. '
    '<l eID="gen2585" level="1"/>'
)

KJV_ROM_16_27_END = (
    '<w lemma="strong:G0281">Amen</w>.  <div eID="gen9005" type="x-p"/> <chapter eID="Rom.16"/> '
    '<title>Written to the Romans from Corinthus, <transChange type="added">and sent</transChange>'
    ' by Phebe servant of the church at Cenchrea.</title> '
    '<div canonical="true" eID="gen8965" osisID="Rom" type="book"/>'
)


def test_note_removed_without_gluing_words():
    verse = parse_verse(WEB_GEN_1_1)
    assert verse.text == "In the beginning, God created the heavens and the earth."


def test_removed_note_before_punctuation_leaves_no_space():
    assert parse_verse(WEB_JUDG_13_18_END).text == "since it is incomprehensible?”"
    assert parse_verse(WEB_LUKE_12_6).text == (
        "“Aren’t five sparrows sold for two assaria coins? Not one of them is forgotten by God."
    )


def test_strongs_captured_in_order_without_leading_zeros():
    verse = parse_verse(WEB_GEN_1_1)
    assert verse.strongs == ("H430", "H853", "H7225", "H1254", "H8064", "H776")


def test_tagged_words_kept_with_added_words_and_divine_name():
    verse = parse_verse(KJV_GEN_2_4)
    assert verse.text == (
        "These are the generations of the heavens, in the day that the LORD God made the earth,"
    )
    assert verse.strongs[:2] == ("H428", "H8435")
    assert "H3068" in verse.strongs


def test_x_p_milestone_at_verse_start_opens_a_paragraph():
    verse = parse_verse(WEB_GEN_1_3)
    assert verse.paragraph_start
    assert verse.paragraph_marks == {"x-p"}
    assert verse.text == "God said, “Let there be light,” and there was light."


def test_paragraph_end_or_mid_verse_paragraph_is_not_a_start():
    assert not parse_verse(WEB_GEN_1_2_END).paragraph_start
    verse = parse_verse(WEB_GEN_14_20)
    assert not verse.paragraph_start
    assert verse.text == "hand.” Abram gave him a tenth of all."


def test_verse_one_opens_a_paragraph():
    verse = parse_verse(WEB_GEN_1_1, chapter_start=True)
    assert verse.paragraph_marks == {"chapter"}


def test_pilcrow_removed_and_marks_paragraph():
    verse = parse_verse(KJV_GEN_1_6)
    assert verse.text == (
        "And God said, Let there be a firmament in the midst of the waters."
    )
    assert verse.paragraph_marks == {"pilcrow", "x-p"}


def test_stanza_break_in_poetry_opens_a_paragraph():
    verse = parse_verse(KJV_PS_1_4)
    assert verse.paragraph_marks == {"stanza"}
    assert verse.text.startswith("The ungodly are not so: but are like the chaff")


def test_psalm_title_kept_apart_from_verse_text():
    verse = parse_verse(WEB_PS_3_1, chapter_start=True)
    assert verse.titles == ("A Psalm by David, when he fled from Absalom his son.",)
    assert verse.text == (
        "Yahweh, how my adversaries have increased! Many are those who rise up against me."
    )


def test_speaker_label_kept_apart_from_verse_text():
    verse = parse_verse(WEB_SONG_1_2)
    assert verse.speakers == ("Beloved",)
    assert verse.text == "Let him kiss me with the kisses of his mouth;"


def test_glossary_after_last_verse_is_cut_off():
    assert len(WEB_REV_22_21) > MAX_VERSE_CHARS
    verse = parse_verse(WEB_REV_22_21)
    assert verse.text == "The grace of the Lord Jesus Christ be with all the saints. Amen."
    assert verse.paragraph_start
    assert verse.titles == ()
    assert verse.dropped_chars > MAX_VERSE_CHARS
    assert "Abaddon" not in verse.text


def test_subscription_after_chapter_end_is_a_title_not_text():
    verse = parse_verse(KJV_ROM_16_27_END)
    assert verse.text == "Amen."
    assert verse.titles == (
        "Written to the Romans from Corinthus, and sent by Phebe servant of the church at "
        "Cenchrea.",
    )
    assert verse.dropped_chars == 0


def test_entities_unescaped_and_empty_verse_is_empty():
    assert parse_verse("Salt &amp; light").text == "Salt & light"
    empty = parse_verse(
        PREVERSE_OPEN + '<div sID="gen34342" type="x-p"/>' + PREVERSE_CLOSE
        + '<note placement="foot"><reference type="annotateRef">8:37 </reference>TR adds '
        '<rdg type="alternate">Philip said, “If you believe with all your heart, you may.”'
        "</rdg></note>"
    )
    assert empty.text == ""
    assert empty.strongs == ()


# --- pericopes ----------------------------------------------------------------------------

TABLE = [
    Pericope(verse_id(1, 1, 2), verse_id(1, 1, 5), "A"),
    Pericope(verse_id(1, 1, 6), verse_id(1, 1, 9), "B"),
    Pericope(verse_id(1, 2, 1), verse_id(1, 2, 3), "C"),
    Pericope(verse_id(2, 1, 3), verse_id(2, 1, 4), "D"),
]


def test_covered_verses_map_to_their_range():
    result = assign_pericopes([(1, 1, 2), (1, 1, 9), (1, 2, 3), (2, 1, 4)], TABLE)
    assert result.indices == (0, 1, 2, 3)
    assert result.filled == ()


def test_uncovered_verses_join_the_preceding_pericope_of_their_book():
    # 1:1:10 follows B's range; 2:1:5 ends book 2 past D.
    result = assign_pericopes([(1, 1, 10), (2, 1, 5)], TABLE)
    assert result.indices == (1, 3)
    assert result.filled == (0, 1)


def test_uncovered_verse_at_book_start_joins_the_following_pericope():
    result = assign_pericopes([(1, 1, 1), (1, 1, 2)], TABLE)
    assert result.indices == (0, 0)
    assert result.filled == (0,)


def test_never_crosses_into_another_book():
    # 2:1:1 comes right after C (book 1) but belongs with D; book 3 has no pericope at all.
    result = assign_pericopes([(2, 1, 1), (3, 1, 1)], TABLE)
    assert result.indices == (3, None)
    assert result.filled == (0,)
    assert result.covered() == {3}


def test_bsb_table_loads():
    from lectio.bible.pericopes import load_pericopes

    table = load_pericopes()
    assert len(table) == 2436
    assert table[0] == Pericope(1001001, 1002003, "The Creation")
    assert all(a.end_id < b.start_id for a, b in zip(table, table[1:]))
