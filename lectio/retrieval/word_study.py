"""Queries about a biblical word: "G26", "ἀγάπη", "agape", "the Hebrew
word for mercy". Such a query gets the Strong's entry (exact, then fuzzy, then semantic) and the
verses that use the word, which the WEB tags with Strong's numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lectio.readers.renderings import is_function_word
from lectio.retrieval.expansion import printed
from lectio.rulesets.strongs import plain_letters

_NUMBER = re.compile(r"\b(?:strong'?s\s+)?([GH])0*([1-9]\d{0,4})\b", re.IGNORECASE)
_GREEK = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]+(?:\s+[\u0370-\u03ff\u1f00-\u1fff]+)*")
_HEBREW = re.compile(r"[\u0590-\u05ff]+(?:\s+[\u0590-\u05ff]+)*")
_WORD_FOR = re.compile(r"\b(greek|hebrew)\s+(?:word|term|noun|verb)s?\s+(?:for|behind|translated(?:\s+as)?)\s+[\"“']?([^\"”'?]+)",
                       re.IGNORECASE)
_NAMED_WORD = re.compile(r"\b(greek|hebrew)\s+(?:word|term)\s+[\"“']?([a-z][a-z'-]{2,})[\"”']?", re.IGNORECASE)
# A bare transliteration is only taken for a word study in a short query ("agape", "hesed
# meaning"), of four letters or more, and never a word a translation prints: in a sentence the same
# letters are more likely English, and a word the Bibles print is English or a name (Strong's
# transliterates names: "aaron" is Aaron, in any case, not G2).
_SHORT_QUERY_WORDS = 3
_MIN_LETTERS = 4


@dataclass(frozen=True)
class WordQuery:
    how: str  # number | script | meaning | transliteration
    # "G26", the Greek/Hebrew word, the English meaning, or plain transliterations (space-separated
    # candidates when the query did not name the language: any one may match, exactly)
    term: str
    language: str | None = None  # Greek | Hebrew, when the query says or the script shows


def detect(query: str) -> WordQuery | None:
    if match := _NUMBER.search(query):
        return WordQuery("number", f"{match[1].upper()}{match[2]}", "Greek" if match[1].upper() == "G" else "Hebrew")
    if match := _GREEK.search(query):
        return WordQuery("script", match[0], "Greek")
    if match := _HEBREW.search(query):
        return WordQuery("script", match[0], "Hebrew")
    if match := _WORD_FOR.search(query):
        return WordQuery("meaning", match[2].strip(" .!"), match[1].capitalize())
    if match := _NAMED_WORD.search(query):
        return WordQuery("transliteration", plain_letters(match[2]), match[1].capitalize())
    words = re.findall(r"[^\W\d_]+", query)
    if 0 < len(words) <= _SHORT_QUERY_WORDS:
        candidates = [plain_letters(w) for w in words if len(w) >= _MIN_LETTERS and not _english(w.lower())]
        if candidates:
            return WordQuery("transliteration", " ".join(candidates))
    return None


def _english(word: str) -> bool:
    """A word the Bibles print (English, or a name) or a function word: no transliteration."""
    return printed(word) or is_function_word(word)
