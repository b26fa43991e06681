"""A query means the same in every surface form a reader types it in: case, a trailing '?', the
punctuation around it, a "verses about …" wrapper and the KJV's spellings change nothing, and a
filter every relevant row satisfies only narrows the rows that may answer (issue 35). On the
session's fixture index, with the real model, and on a small index with Strong's entries whose
transliterations are also names."""

import pytest

from lectio.retrieval.filters import Filters
from lectio.retrieval import SearchConfig, SearchRequest, search

pytestmark = [pytest.mark.slow, pytest.mark.network]

TOPICS = ["peace", "adoption", "moderation", "shepherd", "rejoice"]
SENTENCES = ["do not be anxious about anything", "the love of God in Christ Jesus"]


def surface_forms(query: str, topic: bool) -> list[str]:
    forms = [query, query.lower(), query.title(), query.upper(), f"{query}?", f'"{query}."']
    if topic:
        forms += [f"verses about {query}", f"What does the Bible say about {query}?",
                  f"Bible verses on {query.title()}"]
    return forms


def ranking(conn, query: str, k: int = 10, embedder=None, **options) -> tuple[str, list[str]]:
    response = search(conn, SearchRequest(query, k=k, **options), embedder=embedder)
    return response.mode, [hit.chunk_id for hit in response.results]


@pytest.mark.parametrize("query, topic", [(q, True) for q in TOPICS] + [(q, False) for q in SENTENCES])
def test_every_surface_form_gets_the_same_results(main_run, conn, query, topic):
    expected = ranking(conn, query)
    assert expected[0] == "hybrid" and expected[1]
    for form in surface_forms(query, topic):
        assert ranking(conn, form) == expected, form


def test_the_kjvs_spelling_of_a_word_is_the_word(main_run, conn):
    assert ranking(conn, "rejoiceth") == ranking(conn, "rejoices")
    assert ranking(conn, "he that loveth his brother") == ranking(conn, "he that loves his brother")


# Fusion alone. The steps after it weigh a hit by its fused score (the citation prior, the query
# share) or by the hits around it (collapse, long passages, packing the page), and a rank-fused
# score depends on how many rows of other kinds ranked above it; the evidence of the other kinds
# (EvidenceSettings) adds the passages they speak for, and feedback one more list (tested below).
# With them on, a scripture filter keeps the first hits and may reorder the later ones (for issue
# 35's query-shape suite to measure).
FUSION = SearchConfig.from_options(["evidence.weight=0", "feedback.weight=0"], prominence_weight=0.0,
                                   query_share_weight=0.0, long_passage_tokens=0, collapse_covered=False,
                                   per_source=None)


@pytest.mark.parametrize("query", TOPICS)
def test_a_scripture_filter_narrows_a_topics_fusion_and_keeps_its_path(main_run, conn, query):
    _, filtered = ranking(conn, query, k=20, config=FUSION, filters=Filters(kind="scripture"))
    unfiltered = search(conn, SearchRequest(query, k=40, config=FUSION)).results
    assert filtered == [hit.chunk_id for hit in unfiltered if hit.kind == "scripture"][:20]


@pytest.mark.parametrize("query", TOPICS)
def test_a_scripture_filter_keeps_a_topics_first_scripture_hits(main_run, conn, query):
    _, filtered = ranking(conn, query, filters=Filters(kind="scripture"))
    unfiltered = [hit.chunk_id for hit in search(conn, SearchRequest(query, k=40)).results if hit.kind == "scripture"]
    assert filtered[:5] == unfiltered[:5]


def test_a_reference_stays_a_reference_and_a_book_name_is_a_topic(main_run, conn):
    for form in ("Micah 6:8", "micah 6:8", "Micah 6:8?", "verses about Micah 6:8"):
        response = search(conn, SearchRequest(form))
        assert response.mode == "reference" and "no verses of Micah 6:8" in response.message, form
    assert search(conn, SearchRequest("micah")).mode == "hybrid"
    for form in ("Rom 8:28", "rom 8:28?", '"Rom 8:28."', "What does the Bible say about Rom 8:28?"):
        response = search(conn, SearchRequest(form))
        assert (response.mode, [hit.chunk_id for hit in response.results]) == ("reference", ["rom_8_28_web"]), form
        assert response.query == form  # the response names the query as the caller asked it


# Strong's transliterates names: G2's plain letters are "aaron". Hebrews 5 and 7 name Aaron.
NAMES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Hebrews 5; Hebrews 7; 1 John 4", acl: [public]}
  - {id: strongs-greek, kind: lexicon, format: sword-lexicon, module: StrongsGreek,
     select: "G2; G25-G27", title: Strong's Greek Dictionary, acl: [public]}
"""


@pytest.fixture(scope="module")
def names_index(index_of):
    return index_of(NAMES, ("web", "strongs-greek"))


def test_a_name_in_any_case_is_the_name_not_a_word_study(conn, names_index):
    version, embedder = names_index
    expected = ranking(conn, "Aaron", version=version, embedder=embedder)
    assert expected[0] == "hybrid" and any(hit.endswith("_web") for hit in expected[1])
    for form in ("aaron", "AARON", "aaron?", "verses about aaron"):
        assert ranking(conn, form, version=version, embedder=embedder) == expected, form


def test_a_transliteration_is_a_word_study_in_any_case(conn, names_index):
    version, embedder = names_index
    expected = ranking(conn, "agape", version=version, embedder=embedder)
    assert expected[0] == "word-study" and expected[1][0].startswith("strongs")
    for form in ("Agape", "agape?", "What does the Bible say about agape?"):
        assert ranking(conn, form, version=version, embedder=embedder) == expected, form


# Feedback from the first page moves the query's vector toward its first hits: the same move for
# every surface form (a question mark does not decide whether the query reads as a question) and
# for a filtered search (it reads the unfiltered first page, and walks from the moved vector as the
# unfiltered search does). Its neighbours are one more list fused by rank beside lists a filter
# narrows, so a filtered search keeps the unfiltered search's first scripture hits, as with every
# stage on, rather than its whole fused order.
FEEDBACK = SearchConfig.from_options(["feedback.weight=1", "feedback.max_words=0"])


@pytest.mark.parametrize("query, topic", [(q, True) for q in TOPICS] + [(q, False) for q in SENTENCES])
def test_with_feedback_every_surface_form_gets_the_same_results(main_run, conn, query, topic):
    expected = ranking(conn, query, config=FEEDBACK)
    for form in surface_forms(query, topic):
        assert ranking(conn, form, config=FEEDBACK) == expected, form


@pytest.mark.parametrize("query", TOPICS)
def test_with_feedback_a_scripture_filter_keeps_a_topics_first_scripture_hits(main_run, conn, query):
    _, filtered = ranking(conn, query, config=FEEDBACK.with_settings({"evidence.weight": 0.0}),
                          filters=Filters(kind="scripture"))
    unfiltered = search(conn, SearchRequest(query, k=40, config=FEEDBACK)).results
    assert filtered[:5] == [hit.chunk_id for hit in unfiltered if hit.kind == "scripture"][:5]


@pytest.mark.parametrize("query", TOPICS)
def test_with_feedback_and_the_evidence_a_scripture_filter_keeps_a_topics_first_scripture_hits(main_run, conn, query):
    # The evidence of the other kinds reads the unfiltered page as feedback moved it, the page the
    # unfiltered search shows ("peace" lost its fifth scripture hit while it read the page unmoved).
    _, filtered = ranking(conn, query, config=FEEDBACK, filters=Filters(kind="scripture"))
    unfiltered = search(conn, SearchRequest(query, k=40, config=FEEDBACK)).results
    assert filtered[:5] == [hit.chunk_id for hit in unfiltered if hit.kind == "scripture"][:5]


def test_feedback_changes_some_fixture_rankings(main_run, conn):
    """The tests above would pass vacuously if feedback never ran on the fixture index."""
    without = SearchConfig.from_options(["feedback.weight=0"])
    moved = [query for query in TOPICS
             if ranking(conn, query, k=20, config=FEEDBACK) != ranking(conn, query, k=20, config=without)]
    assert moved


def test_a_query_longer_than_feedbacks_max_words_is_not_moved(main_run, conn):
    # A quotation's first hits decide it: feedback is kept to short queries (feedback.max_words).
    pairs = [f"{a} {b}" for a, b in zip(TOPICS, TOPICS[1:])]
    one, two = (SearchConfig.from_options(["feedback.weight=1", f"feedback.max_words={n}"]) for n in (1, 2))
    without = SearchConfig.from_options(["feedback.weight=0"])
    unmoved = [ranking(conn, query, k=20, config=without) for query in pairs]
    assert [ranking(conn, query, k=20, config=one) for query in pairs] == unmoved
    assert [ranking(conn, query, k=20, config=two) for query in pairs] != unmoved
