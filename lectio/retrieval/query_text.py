"""What a query means, read once, in one place, for every strategy of a search.

Readers ask the same thing in many surface forms: "Peace", "peace?", "verses about peace", "What
does the Bible say about peace?", "he that loveth" for "he that loves". None of these may change
what the search does. The ranked strategies read one text: the query's subject (a question's
wrapper and the punctuation around it taken off), in lower case (BM25's index and the uncased
embedding model fold case anyway, so nothing is lost), with the KJV's verb spellings as the WEB
spells them (lectio.retrieval.expansion.modern_spelling: loveth → loves, shewed → showed). What
the query's words alone decide (a one-word topic, lectio.retrieval.shape) is decided on that text.

What the folding must not lose is decided first, on the query as typed: a reference ("Micah 6:8",
"Rom 8:28") and a word study ("G26", "ἀγάπη", "the Greek word for love") are looked for in it
before the subject is; a name keeps its letters (only case goes), and no spelling rule touches a
word the WEB prints, so "micah" is a topic and "Micah 6:8" a verse.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from lectio.bible.refs import RefRange, parse_reference
from lectio.retrieval import word_study
from lectio.retrieval.expansion import modern_spelling

# The ways readers wrap a subject: "what does the Bible say about X", "Bible verses about X",
# "scriptures on X". Only a wrapper with a subject after it is taken off.
_WRAPPER = re.compile(
    r"""^(?:
        (?:what|where)\s+(?:does|do|did)\s+(?:the\s+)?(?:holy\s+)?(?:bible|scriptures?|word\s+of\s+god|god'?s\s+word)
            \s+(?:say|says|teach|teaches|tell\s+us)
      | what\s+(?:the\s+)?(?:bible|scriptures?)\s+(?:says|teaches)
      | (?:(?:show|give|find|list)\s+(?:me\s+)?)?(?:some\s+|the\s+)?(?:bible\s+|scripture\s+|biblical\s+)?
            (?:verses?|passages?|scriptures?|texts?)(?:\s+that\s+(?:talk|speak|mention))?
    )\s+(?:about|on|of|for|regarding|concerning)\s+(?P<subject>\S.*)$""",
    re.IGNORECASE | re.VERBOSE)
_WORD = re.compile(r"[^\W\d_]+")
# A question's frame: the words every question of its kind shares, before or around its subject.
# An auxiliary opening ("Is …", "Must …", "Do …") is a question only with a question mark: "Do not
# be anxious" is a verse.
_AUXILIARY = r"(?:is|are|was|were|am|be|does|do|did|should|shall|must|can|could|will|would|may|might|has|have|had|ought)"
_FRAMES = (
    re.compile(r"^what\s+(?:does|do|did)\s+(?:the\s+word\s+)?(?P<subject>.+?)\s+mean$", re.IGNORECASE),
    re.compile(r"^(?:what|who|which)\s+(?:is|are|was|were)\s+(?:the\s+meaning\s+of\s+)?(?P<subject>.+)$",
               re.IGNORECASE),
    re.compile(rf"^(?:why|how|when|where|what|who|whom|which)\s+{_AUXILIARY}\s+(?P<subject>.+)$", re.IGNORECASE),
    re.compile(r"^(?:why|how)\s+(?P<subject>.+)$", re.IGNORECASE),
)
_ASKED = re.compile(rf"^{_AUXILIARY}\s+(?:not\s+)?(?P<subject>.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class QueryText:
    """One query, read: as typed, its subject, and the text the ranked strategies read."""

    asked: str  # as the caller typed it (control characters already taken out)
    subject: str  # the wrapper and surrounding punctuation off, case and spelling as typed
    text: str  # the subject in lower case with the WEB's spellings: what a ranked search reads
    # A question's subject read the same way ("faith" of "What is faith?"); None for no question.
    question_subject: str | None = None
    # Whether the query reads as a question once a question mark is supposed ("Do not be anxious"
    # as "Do not be anxious?"): what a search decides by it must not change with the mark.
    question_form: bool = False

    def reference(self) -> list[RefRange] | None:
        """The verses the query names, as typed or once its wrapper is off ("Micah 6:8?"); None
        for none. Raises lectio.bible.refs.UnknownReference for a book or chapter that is none."""
        ranges = parse_reference(self.asked)
        if ranges is None and self.subject != self.asked:
            ranges = parse_reference(self.subject)
        return ranges

    def asks(self) -> bool:
        """Whether the query is a question: a question's frame around its subject ("what is love",
        "Is man a reasonable creature?"). A question mark alone asks nothing: "peace?" is "peace"."""
        return self.question_subject is not None

    def word_study(self) -> word_study.WordQuery | None:
        """The biblical word the query asks about: a number, script or "the Greek word for …" as
        typed; a bare transliteration ("agape") in the subject, where a wrapper's words are none."""
        found = word_study.detect(self.asked)
        bare = found is None or (found.how == "transliteration" and not found.language)
        if bare and self.subject != self.asked:
            found = word_study.detect(self.subject)
        return found


def read(query: str) -> QueryText:
    """`query` (already free of control characters) read once for every strategy."""
    subject = _subject(query)
    asked = _question_subject(subject, query.rstrip().endswith("?"))
    return QueryText(query, subject, _modern(subject), _modern(asked) if asked else None,
                     _question_subject(subject, True) is not None)


def _modern(text: str) -> str:
    return _WORD.sub(lambda word: modern_spelling(word[0]), text.lower())


def _question_subject(subject: str, question_mark: bool) -> str | None:
    """What a question asks about, its frame off ("What does grace mean?" -> "grace", "Is man a
    reasonable creature?" -> "man a reasonable creature"); None where `subject` (a query's,
    lectio.retrieval.query_text._subject) is no question."""
    inner = _trim(subject)
    for frame in _FRAMES:
        if match := frame.match(inner):
            return _trim(match["subject"]) or None
    if question_mark and (match := _ASKED.match(inner)):
        return _trim(match["subject"]) or None
    return None


def _subject(query: str) -> str:
    """The query without the punctuation around it ("peace?", '"peace."') and without a wrapper
    ("verses about peace"); the query itself where nothing would be left."""
    inner = _trim(query)
    if match := _WRAPPER.match(inner):
        inner = _trim(match["subject"]) or inner
    return inner or query


def _trim(text: str) -> str:
    """`text` without the spaces, punctuation and symbols at either end."""
    start, end = 0, len(text)
    while start < end and _outer(text[start]):
        start += 1
    while end > start and _outer(text[end - 1]):
        end -= 1
    return text[start:end]


def _outer(char: str) -> bool:
    return char.isspace() or unicodedata.category(char)[0] in "PS"
