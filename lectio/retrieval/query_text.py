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


@dataclass(frozen=True)
class QueryText:
    """One query, read: as typed, its subject, and the text the ranked strategies read."""

    asked: str  # as the caller typed it (control characters already taken out)
    subject: str  # the wrapper and surrounding punctuation off, case and spelling as typed
    text: str  # the subject in lower case with the WEB's spellings: what a ranked search reads

    def reference(self) -> list[RefRange] | None:
        """The verses the query names, as typed or once its wrapper is off ("Micah 6:8?"); None
        for none. Raises lectio.bible.refs.UnknownReference for a book or chapter that is none."""
        ranges = parse_reference(self.asked)
        if ranges is None and self.subject != self.asked:
            ranges = parse_reference(self.subject)
        return ranges

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
    return QueryText(query, subject, _WORD.sub(lambda word: modern_spelling(word[0]), subject.lower()))


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
