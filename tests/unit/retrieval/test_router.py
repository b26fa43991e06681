"""The router decides once how a query is answered, from what its text says; nothing after it
decides the query's shape again."""

import ast
from pathlib import Path

import pytest

from lectio.bible.refs import UnknownReference
from lectio.retrieval import SearchConfig, read_query, router

PACKAGE = Path(router.__file__).parent
# Where the shape of a query may be read: the router, and the learned ranker's features (the
# trees learned the text's shape as the ranked text shows it, and read it the same way).
READS_SHAPE = {"router.py", "learned_rank.py", "shape.py", "query_text.py"}
SHAPE_CALLS = {"query_shape", "is_paragraph", "asks", "word_study", "reference"}


def planned(query: str, *options: str) -> router.Plan:
    return router.plan(read_query(query), SearchConfig.from_options(options))


@pytest.mark.parametrize("query, shape", [
    ("John 3:16", "reference"), ("Micah 6:8?", "reference"),
    ("the Greek word for love", "word-study"), ("G26", "word-study"),
    ("peace", "topic"), ("What is faith?", "question"), ("do not be anxious", "question"),
    ("the love of God in Christ Jesus", "sentence"),
    (" ".join(["grace"] * 35), "paragraph"),
])
def test_each_shape_has_its_plan(query, shape):
    assert planned(query).shape == shape


def test_a_question_ranked_by_its_subject_takes_the_subjects_shape():
    plan = planned("What is faith?", "questions.subject=true")
    assert (plan.text, plan.embedded, plan.question, plan.topic) == ("faith", "what is faith", True, True)
    assert planned("What is faith?").text == "what is faith" and not planned("What is faith?").topic


def test_a_paragraph_is_ranked_under_the_paragraphs_settings():
    plan = planned(" ".join(["grace"] * 35))
    assert plan.paragraph and plan.config == SearchConfig().for_paragraphs()
    assert not planned(" ".join(["grace"] * 35), "paragraphs.words=0").paragraph


def test_word_studies_off_rank_the_word_and_a_bad_reference_is_refused():
    assert planned("the Greek word for love", "word_study=false").word is None
    with pytest.raises(UnknownReference):
        planned("Hezekiah 3:1")


def test_nothing_after_the_router_reads_the_querys_shape_again():
    offenders = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name in READS_SHAPE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", None))
                if name in SHAPE_CALLS:
                    offenders.append(f"{path.name}:{node.lineno} {name}")
    assert offenders == []
