"""The query-shape suite's forms: each changes a query's surface or adds a filter its verses
satisfy, never what it asks; and the comparison of the forms' reports (the runner:
benchmarks/query_variants.py)."""

from pathlib import Path

import pytest

from lectio.evaluation.metrics import LabelledQuery, evaluate
from lectio.evaluation.querysets import Query, load_queries
from lectio.evaluation.query_forms import (
    BASE,
    FORMS,
    compare,
    form_of,
    forms_of,
    question,
    satisfied_filters,
    title_case,
)

QUERIES = Path(__file__).resolve().parents[3] / "data" / "queries"
TOPIC = Query("Abstemiousness", "nave-abstemiousness", relevant=("prov_23_1", "dan_1_8"))
GOSPEL = Query("The Lord's Prayer", "t-prayer", relevant=("matt_6_9", "luke_11_2"))


def test_title_case_raises_each_word_without_breaking_names_or_possessives():
    assert title_case("beer-lahai-roi") == "Beer-lahai-roi"
    assert title_case("god's love for the world") == "God's Love For The World"
    assert title_case("1 john 4:8") == "1 John 4:8"
    assert title_case("LORD of hosts") == "Lord Of Hosts"


def test_a_question_wraps_the_subject_once():
    assert question("Abstemiousness") == "What does the Bible say about Abstemiousness?"
    assert question("verses about peace") == "What does the Bible say about peace?"
    assert question("What does the Bible say about anxiety and worry?") == (
        "What does the Bible say about anxiety and worry?")
    assert question("forgiving others.") == "What does the Bible say about forgiving others?"


def test_every_form_keeps_the_id_labels_and_the_querys_own_filters():
    own = Query("the fear of the Lord", "q1", relevant=("prov_1_7",), filters={"translation": "KJV"},
                should_not_appear=("gen_1_1",))
    for name in FORMS:
        shaped = form_of(own, name)
        assert (shaped.id, shaped.relevant, shaped.should_not_appear) == (own.id, own.relevant, own.should_not_appear)
        assert shaped.filters["translation"] == "KJV"
    assert form_of(own, "lower").query == "the fear of the lord"
    assert form_of(own, "title+kind").query == "The Fear Of The Lord"
    assert form_of(own, "title+kind").filters == {"kind": "scripture", "translation": "KJV"}
    assert form_of(own, BASE) == own


def test_the_added_filters_are_only_those_every_relevant_verse_satisfies():
    assert satisfied_filters(TOPIC) == {"kind": "scripture"}
    # Proverbs and Daniel: one testament, two genres.
    assert satisfied_filters(TOPIC, narrow=True) == {"kind": "scripture", "testament": "OT"}
    assert satisfied_filters(GOSPEL, narrow=True) == {"kind": "scripture", "testament": "NT", "genre": "gospel"}
    # Nothing labelled, nothing known about the rows it wants.
    assert satisfied_filters(Query("grace", "g"), narrow=True) == {}
    assert form_of(GOSPEL, "as_written+narrow").filters == {"kind": "scripture", "testament": "NT", "genre": "gospel"}


def test_a_query_filter_is_never_overridden_by_an_added_one():
    asked = Query("love", "q", relevant=("john_3_16",), filters={"kind": "commentary"})
    assert form_of(asked, "as_written+kind").filters == {"kind": "commentary"}


def test_unknown_form_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown query form 'shout'"):
        form_of(TOPIC, "shout")


def test_forms_of_puts_the_as_written_form_first_and_keeps_query_order():
    shaped = forms_of([TOPIC, GOSPEL], ["lower"])
    assert list(shaped) == [BASE, "lower"]
    assert [q.id for q in shaped["lower"]] == [TOPIC.id, GOSPEL.id]
    assert list(forms_of([TOPIC])) == list(FORMS)


def test_every_committed_set_loads_in_every_form():
    for path in sorted(QUERIES.glob("*.jsonl")):
        queries = load_queries(path)
        for name, shaped in forms_of(queries).items():
            assert len(shaped) == len(queries), (path.name, name)
            assert all(q.query.strip() for q in shaped)


class Hit:
    def __init__(self, *refs: str) -> None:
        self.refs, self.text = refs, "text"


def test_compare_reports_each_form_its_gap_to_the_best_and_paired_intervals():
    labelled = [LabelledQuery(q.id, q.query, frozenset(q.relevant_set)) for q in (TOPIC, GOSPEL)]
    found = {"nave-abstemiousness": [Hit("prov_23_1")], "t-prayer": [Hit("gen_1_1"), Hit("matt_6_9")]}
    reports = {
        BASE: evaluate(labelled, lambda q: found[q.id]),
        "lower": evaluate(labelled, lambda q: []),
        "lower+kind": evaluate(labelled, lambda q: found[q.id][-1:]),
    }
    table = compare(reports, ("mrr",))["mrr"]
    assert table["forms"][BASE] == {"value": 0.75, "below_best": 0.25, "vs_as_written": None, "vs_unfiltered": None}
    assert table["forms"]["lower"]["vs_as_written"] == [-1.0, -0.5]
    assert table["forms"]["lower+kind"]["value"] == 1.0 and table["forms"]["lower+kind"]["below_best"] == 0.0
    # The filtered form is also set against the same surface unfiltered.
    assert table["forms"]["lower+kind"]["vs_unfiltered"] == [1.0, 1.0]
    assert table["spread"] == 1.0
