"""What kind of answer a query wants, judged from the query alone.

A short topic ("hospitality", "Adder", "speaking in tongues") is answered best by many verses:
paragraphs and pericopes spend a reader's token budget on a few passages, where a topic's verses
are scattered over the whole Bible. A named story ("the prodigal son") is a passage, and its
pericope is the answer; the ranking tells the two apart. Anything longer (a question, a
paraphrase of a verse, a theme in a sentence) keeps every granularity. A paragraph (a doctrinal
statement, a commentary passage) comments on a passage and asks for it whole.
"""

from __future__ import annotations

import re

from lectio.readers.renderings import is_function_word
from lectio.retrieval.expansion import query_words

TOPIC = "topic"
SENTENCE = "sentence"

_QUESTION = re.compile(r"\s*(?:what|how|why|who|whom|whose|where|when|which|should|can|could|does|do|did|is|are|was|will|would)\b",
                       re.IGNORECASE)


def content_words(query: str) -> list[str]:
    return [w for w in query_words(query) if not is_function_word(w)]


def asks(query: str) -> bool:
    """Whether the query reads as a question: a question mark, or a question word first."""
    return "?" in query or bool(_QUESTION.match(query))


def query_shape(query: str, topic_words: int) -> str:
    """TOPIC for at most `topic_words` content words that ask no question, SENTENCE otherwise.
    Whether a short query names a passage instead is for the ranking to tell (its best hit is
    the pericope)."""
    words = content_words(query)
    if 0 < len(words) <= topic_words and not asks(query):
        return TOPIC
    return SENTENCE


def is_paragraph(query: str, words: int) -> bool:
    """At least `words` words (0 for never): as long as a paragraph. A quotation of a long verse
    is as long, and is found as well either way: its verse matches it word for word."""
    return 0 < words <= len(query_words(query))
