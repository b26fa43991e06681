"""Reading a query once: the subject of its wrapper, the text the ranked strategies read, and
what is decided on the query as typed (a reference, a word study, a name)."""

from __future__ import annotations

import pytest

from lectio.bible.refs import UnknownReference
from lectio.retrieval.expansion import kjv_spellings, modern_spelling
from lectio.retrieval.query_text import read
from lectio.retrieval.shape import TOPIC, query_shape


@pytest.mark.parametrize("form", ["peace", "Peace", "PEACE", "peace?", " peace. ", '"Peace!"', "(peace)",
                                  "verses about peace", "Bible verses on peace", "scriptures about Peace",
                                  "What does the Bible say about peace?", "what the Bible says about peace",
                                  "What does Scripture teach concerning peace?"])
def test_every_surface_form_of_a_topic_reads_as_the_topic(form):
    assert read(form).text == "peace"
    assert query_shape(read(form).text, 1) == TOPIC  # a trailing '?' or a wrapper asks no question


def test_a_question_of_its_own_stays_a_question_and_keeps_its_words():
    meant = read("How should we pray?")
    assert (meant.subject, meant.text) == ("How should we pray", "how should we pray")
    assert query_shape(meant.text, 1) != TOPIC


def test_a_wrapper_with_nothing_after_it_and_a_query_of_punctuation_are_kept():
    assert read("verses about").text == "verses about"
    assert read("???").text == "???"
    assert read("verses about ?").subject == "verses about"


def test_the_kjvs_verb_spellings_read_as_the_webs():
    assert read("He that LOVETH his brother").text == "he that loves his brother"
    assert read("shewed mercy").text == read("showed mercy").text == "showed mercy"
    assert [modern_spelling(w) for w in ("knoweth", "lovest", "sitteth", "gnasheth", "shew")] == \
        ["knows", "love", "sits", "gnashes", "show"]
    # A word the WEB prints, and a name, is never respelled.
    assert [modern_spelling(w) for w in ("love", "rest", "aaron", "israel", "nazareth", "bethlehem")] == \
        ["love", "rest", "aaron", "israel", "nazareth", "bethlehem"]
    assert "loveth" in kjv_spellings("loves") and kjv_spellings("aaron") == ()


def test_a_reference_is_read_as_typed_and_then_without_its_wrapper():
    assert read("Micah 6:8").reference()[0].label == read("micah 6:8?").reference()[0].label
    assert read("What does the Bible say about Rom 8:28?").reference()[0].start.book == "rom"
    assert read("micah").reference() is None and read("Micah").reference() is None
    assert read("micah").text == "micah" and query_shape("micah", 1) == TOPIC
    with pytest.raises(UnknownReference):
        read("Romans 17:1?").reference()


def test_a_word_study_is_read_as_typed_and_names_are_none():
    assert read("G26").word_study().term == "G26"
    assert read("the Greek word for love?").word_study().how == "meaning"
    for form in ("agape", "Agape", "agape?", "What does the Bible say about agape?"):
        assert read(form).word_study().term == "agape", form
    # Strong's transliterates names ("aaron" is G2's): a word the Bibles print is English or a name.
    for form in ("aaron", "Aaron", "AARON", "verses about aaron", "amen", "peace"):
        assert read(form).word_study() is None, form


@pytest.mark.parametrize("question, subject", [
    ("What is God?", "god"), ("what is love", "love"), ("What does justification mean?", "justification"),
    ("What is the meaning of grace?", "grace"), ("Who is the Holy Spirit?", "the holy spirit"),
    ("Is man a reasonable creature?", "man a reasonable creature"), ("Why did Jesus weep?", "jesus weep"),
    ("Must baptism be in the name of the Father?", "baptism be in the name of the father"),
    ("How should we pray?", "we pray"), ("Is not this the fast?", "this the fast"),
])
def test_a_questions_subject_is_read_without_its_frame(question, subject):
    assert read(question).question_subject == subject


@pytest.mark.parametrize("query", ["Do not be anxious about anything", "Is this the fast", "anxiety",
                                   "What does the Bible say about anxiety?", "the love of God", "?"])
def test_a_quotation_a_topic_and_a_wrapped_topic_have_no_question_subject(query):
    # An auxiliary opening without a question mark is a verse ("Do not be anxious"), and a
    # wrapper's subject is already the text.
    assert read(query).question_subject is None


def test_a_short_questions_subject_is_a_topic():
    assert query_shape(read("What is faith?").question_subject, 1) == TOPIC
    assert query_shape(read("What is faith?").text, 1) != TOPIC


@pytest.mark.parametrize("query, question", [
    ("Must baptism be in the name of the Father?", True), ("what is love", True), ("How should we pray", True),
    ("anxiety?", False), ("anxiety", False), ("Do not be anxious about anything", False),
    ("For God so loved the world", False), ("What does the Bible say about anxiety", False),
])
def test_whether_a_query_asks_is_read_of_it_as_typed(query, question):
    # A wrapper ("what does the Bible say about") asks for a topic, not a question's answer, and a
    # question mark alone changes nothing ("peace?" is "peace").
    assert read(query).asks() is question


@pytest.mark.parametrize("query, form", [
    ("Do not be anxious about anything", True), ("Do not be anxious about anything?", True),
    ("Is man a reasonable creature", True), ("what is love", True),
    ("peace", False), ("peace?", False), ("For God so loved the world", False),
])
def test_whether_a_query_reads_as_a_question_does_not_hang_on_its_question_mark(query, form):
    # What a search decides by it (feedback for questions) is the same for "X" and "X?".
    assert read(query).question_form is form
