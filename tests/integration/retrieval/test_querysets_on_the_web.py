"""The two committed query sets checked against the real World English Bible, and the Nave's
references the generator repairs, on the real Nave's module (both downloaded on first use; the
loading and the generator's offline parts: tests/unit/evaluation/test_querysets.py)."""

import pytest

from lectio.bible.books import book_by_osis
from lectio.bible.refs import Ref, parse_reference
from lectio.evaluation.naves import ensure_naves, nave_topics
from lectio.readers.corpus import ensure_sword_module
from lectio.readers.sword_bible import parse_verse, read_sword_bible

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def web_text(settings, theology, naves_set):
    """WEB text of every verse id the two sets name (only their chapters are read)."""
    named = {
        ref
        for query in (*theology, *naves_set)
        for ref in (*query.relevant_set, *query.should_not_appear)
    }
    chapters = {(Ref.from_id(ref).book, Ref.from_id(ref).chapter) for ref in named}
    library = ensure_sword_module(settings.corpus_dir, "engWEB2015eb")
    return {
        f"{book_by_osis(v.book_osis).id}_{v.chapter}_{v.verse}": parse_verse(v.markup).text
        for v in read_sword_bible(
            library, "engWEB2015eb", lambda osis, ch: (book_by_osis(osis).id, ch) in chapters
        )
    }


def test_every_labelled_verse_has_web_text(theology, naves_set, web_text):
    for query in (*theology, *naves_set):
        for ref in (*query.relevant_set, *query.should_not_appear):
            assert web_text.get(ref), f"{query.id}: {ref} has no WEB text"


def test_reference_queries_are_labelled_with_exactly_the_verses_they_name(theology, web_text):
    reference_queries = [q for q in theology if parse_reference(q.query)]
    assert len(reference_queries) >= 15
    ordinals = {ref: Ref.from_id(ref).ordinal for ref, text in web_text.items() if text}
    for query in reference_queries:
        named = {
            ref
            for found in parse_reference(query.query)
            for ref, ordinal in ordinals.items()
            if found.start_ordinal <= ordinal <= found.end_ordinal
        }
        assert set(query.relevant) == named, query.id
        assert query.expected_top_5[0] == min(named, key=ordinals.__getitem__)


def test_qualifier_strings_occur_in_the_relevant_verses(theology, web_text):
    for query in theology:
        text = " ".join(web_text[ref] for ref in query.relevant)
        for wanted in query.must_include_text:
            assert wanted in text, query.id


def test_nave_refs_cut_short_by_the_markup_are_repaired_or_dropped(settings):
    topics = nave_topics(ensure_naves(settings.corpus_dir))
    # "<ref osisRef="Jude.1.1">Jude 1</ref>:8-13" is Jude 8-13.
    assert "Jude.1.8-Jude.1.13" in topics["ANARCHY"].osis_refs
    assert "Jude.1.1" not in topics["ANARCHY"].osis_refs
    # "To <ref osisRef="Amos.2">Amos 2</ref>Sa 19:13" is not Amos 2: dropped, counted.
    assert topics["AMNESTY"].osis_refs == ["2Sam.19.16-2Sam.19.23"]
    assert topics["AMNESTY"].garbled == 1
