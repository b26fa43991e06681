"""The router: how one query is answered, decided once from what its text says, before anything
is read. A reference is looked up; a question about a Greek or Hebrew word is studied in the
lexicon (and ranked where the lexicon has nothing); anything else is ranked, and the plan says as
what: the text ranked (a question's subject where the settings rank questions by it), what the
vector side embeds, whether it reads as a question, whether it is as long as a paragraph (and so
ranked under the paragraphs' settings), and whether it is a short topic. Nothing after the router
decides the query's shape again; a topic's path also depends on the rows a search may read
(lectio.retrieval.topics.takes_topic_path)."""

from __future__ import annotations

from dataclasses import dataclass

from lectio.bible.refs import RefRange
from lectio.retrieval import shape
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.query_text import QueryText
from lectio.retrieval.word_study import WordQuery


@dataclass(frozen=True)
class Plan:
    """How a query is answered: `ranges` to look up, else a `word` to study, else (or where the
    study finds nothing) ranked as the rest says."""

    ranges: list[RefRange] | None
    word: WordQuery | None
    subject: str  # what a word study reads of the query ("love" of "the Greek word for love")
    text: str  # what a ranked search ranks
    embedded: str | None  # what the vector side embeds where it differs from `text`
    question: bool  # reads as a question, with its question mark or without (QueryText.question_form)
    paragraph: bool
    topic: bool  # a short topic by its words (lectio.retrieval.shape.query_shape)
    config: SearchConfig  # the settings the ranked search runs under

    @property
    def shape(self) -> str:
        """The plan in one word, as reports name it."""
        if self.ranges:
            return "reference"
        if self.word is not None:
            return "word-study"
        return ("paragraph" if self.paragraph else "question" if self.question else
                shape.TOPIC if self.topic else shape.SENTENCE)


def plan(meant: QueryText, config: SearchConfig) -> Plan:
    """The plan for the query `meant` under `config`. Raises lectio.bible.refs.UnknownReference
    for a reference to a book or chapter that is none."""
    ranges = meant.reference()
    word = meant.word_study() if config.word_study and not ranges else None
    paragraph = shape.is_paragraph(meant.text, config.paragraphs.words)
    ranked = config.for_paragraphs() if paragraph else config
    text, embedded = meant.text, None
    if ranked.questions.subject and meant.asks():  # a question has a subject (QueryText.asks)
        # The frame helps the vector find answers (the model learned questions and their answers);
        # the words and the query's shape are the subject's.
        text, embedded = meant.question_subject, None if ranked.questions.embed_subject else meant.text
    return Plan(ranges, word, meant.subject, text, embedded, meant.question_form, paragraph,
                shape.query_shape(text, ranked.topics.words) == shape.TOPIC, ranked)
