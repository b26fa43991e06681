"""Strong's entries as training queries: the meaning of a word, about the verses tagged with it."""

from __future__ import annotations

import pandas as pd

from lectio.training.guard import Guard
from lectio.training.pairs import MAX_REFS, _lexicon_queries, gloss

AGAPE = ("G26 ἀγάπη (agápē, ag-ah'-pay): from G25 ; love, i.e. affection or benevolence; specially (plural) a "
         "love-feast:--(feast of) charity(-ably), dear, love.")
CHESED = ("H2617 חסד (chêsêd, kheh'-sed): From H2616 ; kindness ; by implication (towards God) piety: - {favour} "
          "{kindness} merciful {mercy}.")


def test_a_gloss_is_the_meaning_and_renderings_without_headword_derivation_or_numbers():
    assert gloss(AGAPE) == ("love, i.e. affection or benevolence specially (plural) a love-feast (feast of) "
                            "charity(-ably), dear, love")
    assert gloss(CHESED) == "kindness by implication (towards God) piety favour kindness merciful mercy"
    assert not any(ch.isdigit() for ch in gloss(AGAPE) + gloss(CHESED))


def row(chunk_id, kind, refs, metadata, text="", source_id="web", acl=("public",), granularity="verse",
        translation="WEB"):
    return {"chunk_id": chunk_id, "kind": kind, "refs": refs, "metadata": metadata, "text": text,
            "source_id": source_id, "acl": list(acl), "granularity": granularity, "translation": translation}


def test_an_entry_is_a_query_about_the_verses_that_carry_its_number_and_a_common_word_is_not():
    verses = [row(f"v{i}", "scripture", [f"john_{i}_1"], {"strongs": ["G26", "G2316"]}) for i in range(1, 4)]
    verses += [row(f"w{i}", "scripture", [f"ps_{i}_1"], {"strongs": ["G2316"]}) for i in range(MAX_REFS)]
    verses.append(row("kjv", "scripture", ["rom_5_5"], {"strongs": ["G26"]}, translation="KJV"))  # not the WEB
    entries = [row("g26", "lexicon", [], {"strongs": "G26"}, AGAPE, "strongs-greek", granularity="lexicon-entry",
                   translation=None),
               row("g2316", "lexicon", [], {"strongs": "G2316"}, "G2316 θεός (theós): a deity:--God.", "strongs-greek",
                   granularity="lexicon-entry", translation=None),
               row("private", "lexicon", [], {"strongs": "G26"}, AGAPE.replace("love", "care"), "mine",
                   acl=("user:alice",), granularity="lexicon-entry", translation=None)]
    found = _lexicon_queries(pd.DataFrame(verses + entries), Guard(queries=frozenset(), shingles=frozenset()))
    assert [(q.origin, sorted(q.refs)) for q in found] == [("lexicon:strongs-greek", ["john_1_1", "john_2_1", "john_3_1"])]
    assert found[0].text == gloss(AGAPE)
