"""The long-passage set's offline parts: the passage cut from a comment, its relevant verses,
and the seeded draw (the committed set rebuilt from the real module:
tests/integration/retrieval/test_long_queries_on_the_modules.py)."""

import json

from lectio.evaluation.long_queries import (
    FILTERS,
    MAX_WORDS,
    MIN_WORDS,
    build_long_queries,
    passage,
    passages,
    query_id,
)
from lectio.evaluation.querysets import load_queries, part_of
from lectio.rulesets.commentary_units import Unit

TEN = "Grace is given to the humble who wait upon the Lord daily."  # 12 words
LENGTHS = {"Rom": (32, 29, 31, 25, 21, 23, 25, 39), "Ps": tuple([6] * 150),
           "Heb": (14, 18, 19, 16, 14, 20, 28, 13, 28, 39, 40)}
WEB = frozenset({*(f"rom_8_{v}" for v in range(1, 40) if v != 30), "heb_11_7", "ps_23_1"})


def unit(book="rom", chapter=8, verses=(28, 29, 30, 31), paragraphs=(f"{TEN} {TEN} {TEN}",), refs=None, scope="verses"):
    return Unit(entry_id=f"mhcc/{book}_{chapter}", book=book, chapter=chapter, scope=scope, verses=tuple(verses),
                section=None, paragraphs=tuple(paragraphs), paragraph_refs=tuple(refs or [()] * len(paragraphs)))


def test_a_passage_is_the_first_run_of_whole_sentences_in_the_word_band():
    cut = passage(f"{TEN} {TEN} {TEN} {TEN}")
    assert cut == f"{TEN} {TEN} {TEN}"
    assert MIN_WORDS <= len(cut.split()) <= MAX_WORDS
    # Too short, and one sentence too long to be cut: neither is a passage.
    assert passage(TEN) is None
    assert passage(" ".join(["word"] * 70) + ".") is None


def test_a_sentence_naming_a_verse_is_left_out_and_never_bridged():
    # Two clean sentences, a reference, two more: no run of three clean sentences exists.
    assert passage(f"{TEN} {TEN} See ver. 18 for this. {TEN} {TEN}") is None
    assert passage(f"{TEN} Compare Is 11:15 here. {TEN} {TEN} {TEN}") == f"{TEN} {TEN} {TEN}"


def test_relevant_is_the_comments_range_and_its_citations_where_the_web_has_text():
    cited = unit(verses=range(28, 32), refs=[("Heb.11.7",)])
    [record] = build_long_queries([cited], LENGTHS, WEB)
    # Rom 8:30 has no WEB text in this fixture: it is dropped; Heb 11:7 is cited: it is kept.
    assert record == {"id": "long-mhcc-rom_8_28_31", "query": f"{TEN} {TEN} {TEN}",
                      "relevant": ["rom_8_28", "rom_8_29", "rom_8_31", "heb_11_7"], "filters": FILTERS}


def test_only_comments_on_a_band_of_verses_with_a_passage_are_eligible():
    units = [
        unit(verses=(1,)),
        unit(verses=range(1, 30)),  # past the band
        unit(chapter=8, scope="chapter", verses=()),  # a chapter's summary
        unit(book="ps", chapter=23, verses=(1, 2), paragraphs=(TEN,)),  # no passage long enough
        unit(book="ps", chapter=23, verses=(1, 2), paragraphs=(TEN, f"{TEN} {TEN} {TEN}")),
    ]
    assert [r["id"] for r in build_long_queries(units, LENGTHS, WEB)] == ["long-mhcc-rom_8_1", "long-mhcc-ps_23_1_2"]
    assert [p.paragraph for p in passages(units[-1:])] == [1]
    assert query_id(units[-1]) == "long-mhcc-ps_23_1_2"


def test_the_draw_is_fixed_by_its_seed_kept_in_canon_order_and_loads_as_a_set(tmp_path):
    units = [unit(verses=(v,)) for v in range(1, 30)]
    first, again = (build_long_queries(units, LENGTHS, WEB, limit=10, seed=3) for _ in range(2))
    assert first == again and len(first) == 10
    assert first != build_long_queries(units, LENGTHS, WEB, limit=10, seed=4)
    verses = [int(r["id"].rsplit("_", 1)[1]) for r in first]
    assert verses == sorted(verses)
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in first))
    assert [q.filters for q in load_queries(path)] == [FILTERS] * 10
    assert {part_of(r["id"]) for r in build_long_queries(units, LENGTHS, WEB)} == {"dev", "test"}
