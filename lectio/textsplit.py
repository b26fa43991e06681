"""Splitting prose to fit the embedding model: structure first, then paragraphs, then sentences.

Shared by every ruleset that chunks prose. Sizes are in the model's word pieces, so "fits"
means the model sees the whole text, header included.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lectio.model import MAX_TEXT_TOKENS, count_tokens, split_into_windows

_BLANK_LINES = re.compile(r"\n\s*\n")


@lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


# The sentencizer ends a sentence at "Rom." or "cf."; theology is full of those.
_ABBREVIATION_END = re.compile(r"(?:\b(?:cf|v|vv|ch|chs|ff|e\.g|i\.e|viz|St|Dr|Mr|Mrs|ed|eds|vol|p|pp|no))\.$")


def sentences(text: str) -> list[str]:
    """Sentences of a paragraph: spaCy's rule-based sentencizer, then re-joined where it cut
    after an abbreviation ("Rom. 8:28", "cf. v. 3") or before a lower-case or digit start."""
    text = text.strip()
    if not text:
        return []
    found: list[str] = []
    for span in _sentencizer()(text).sents:
        sentence = span.text.strip()
        if not sentence:
            continue
        if found and (sentence[0].islower() or sentence[0].isdigit() or _ABBREVIATION_END.search(found[-1])):
            found[-1] = f"{found[-1]} {sentence}"
        else:
            found.append(sentence)
    return found


def paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _BLANK_LINES.split(text) if p.strip()]


def pack(pieces: list[str], max_tokens: int, joiner: str = " ") -> list[str]:
    """Join consecutive pieces greedily while the result still fits max_tokens."""
    sizes = count_tokens(pieces)
    joiner_cost = count_tokens([joiner.strip()])[0] if joiner.strip() else 0
    groups: list[list[str]] = []
    used = 0
    for piece, size in zip(pieces, sizes):
        if groups and used + joiner_cost + size <= max_tokens:
            groups[-1].append(piece)
            used += joiner_cost + size
        else:
            groups.append([piece])
            used = size
    return [joiner.join(g) for g in groups]


def split_to_fit(text: str, max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """Pieces of `text`, each within max_tokens: whole paragraphs where they fit, else sentences,
    and only a sentence longer than the budget is cut at word boundaries."""
    if count_tokens([text])[0] <= max_tokens:
        return [text.strip()]
    units: list[str] = []
    for paragraph in paragraphs(text):
        if count_tokens([paragraph])[0] <= max_tokens:
            units.append(paragraph)
            continue
        for sentence in pack(sentences(paragraph), max_tokens):
            units.extend(split_into_windows(sentence, max_tokens))
    return pack(units, max_tokens, joiner="\n\n")


def last_sentence(text: str) -> str:
    found = sentences(text.split("\n\n")[-1])
    return found[-1] if found else ""


def with_trailing_overlap(pieces: list[str], max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """Repeat each piece's last sentence at the start of the next (seed 000's trailing-sentence
    overlap), when the result still fits; continuity at a boundary without much duplication."""
    out = pieces[:1]
    for previous, piece in zip(pieces, pieces[1:]):
        carried = last_sentence(previous)
        joined = f"{carried} {piece}" if carried else piece
        out.append(joined if carried and count_tokens([joined])[0] <= max_tokens else piece)
    return out
