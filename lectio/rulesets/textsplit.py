"""Splitting prose to fit the embedding model: structure first, then paragraphs, then sentences.

Shared by every ruleset that chunks prose. Sizes are in the model's word pieces, so "fits"
means the model sees the whole text, header included.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lectio.bible.books import find_book
from lectio.readers.raw import MAX_FILE_BYTES
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens, split_into_windows, tokenizer

_BLANK_LINES = re.compile(r"\n\s*\n")


# ---------------------------------------------------------------- words the model cannot read

@lru_cache(maxsize=1)
def _longest_word() -> int:
    return tokenizer().model.max_input_chars_per_word  # 100 for the packaged WordPiece model


def break_overlong_words(text: str) -> str:
    """`text` with every word the tokenizer would read as one [UNK] for its length (a 200 KB
    run with no space or punctuation) cut into shorter words by spaces. Left whole, such a run
    counts as one word piece, so no size cap ever splits it, and the model sees nothing of it:
    cut, it is real word pieces that count and split like any other text."""
    limit = _longest_word()
    return re.sub(rf"\S{{{limit + 1},}}", lambda run: _broken_run(run.group(), limit), text)


def _broken_run(run: str, limit: int) -> str:
    encoding = tokenizer().encode(run, add_special_tokens=False)
    unknown = tokenizer().model.unk_token
    # Only an [UNK] spanning more than the limit was refused for its length; a short one is an
    # unknown character (an emoji), which cutting would not help.
    spans = [(a, b) for token, (a, b) in zip(encoding.tokens, encoding.offsets) if token == unknown and b - a > limit]
    # Half the limit: lower-casing lengthens a few characters ("İ" becomes two).
    step = limit // 2
    out, at = [], 0
    for a, b in spans:
        out += [run[at:a], " ".join(run[k : min(k + step, b)] for k in range(a, b, step))]
        at = b
    return "".join(out) + run[at:]


@lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    # spaCy's default cap (a million characters) guards its parsers' memory; the sentencizer
    # alone needs little, and one paragraph of a long file (a single-line document) may exceed it.
    nlp.max_length = MAX_FILE_BYTES + 1
    return nlp


# The sentencizer ends a sentence at "Rom." or "cf."; theology is full of those.
_ABBREVIATION_END = re.compile(r"(?:\b(?:cf|v|vv|ch|chs|ff|e\.g|i\.e|viz|St|Dr|Mr|Mrs|ed|eds|vol|p|pp|no))\.$")


# An item number standing alone, as in "these rules: 1. That the law is perfect … 2. That …".
_BARE_ENUMERATOR = re.compile(r"\(?\d{1,3}[.)]")
_TRAILING_OPEN_QUOTE = re.compile(r"\s+([\"“‘])$")
_TRAILING_ENUMERATOR = re.compile(r"(?<=[:,;])\s+(\(?\d{1,3}[.)])$")


def _continues(previous: str, sentence: str) -> bool:
    """Whether the sentencizer cut inside a sentence: after an abbreviation ("cf. v. 3"), after a
    book name before its chapter ("Rom. | 8:28"), or before an ASCII lower-case word. Greek
    ("ἱλαστήριον is …") and sigla ("1QS", "4 Ezra") may open a real sentence."""
    if _ABBREVIATION_END.search(previous):
        return True
    if sentence[0].isdigit():
        last_word = previous.rstrip(".").rsplit(None, 1)[-1] if previous.strip() else ""
        return previous.endswith(".") and find_book(last_word) is not None
    return "a" <= sentence[0] <= "z"


def _sentencizer_cuts(text: str) -> list[str]:
    """The sentencizer's sentences, sliced from the text at each sentence's first token: the
    same strings as its spans' text once stripped, without building a Python object per token."""
    from spacy.attrs import IDX, SENT_START  # spaCy loads slowly; only prose that is split needs it

    doc = _sentencizer()(text)
    if len(doc) == 0:
        return []
    columns = doc.to_array([IDX, SENT_START])
    starts = [0] + [int(idx) for idx, start in columns[1:] if start == 1]
    return [text[a:b].strip() for a, b in zip(starts, starts[1:] + [len(text)])]


def sentences(text: str) -> list[str]:
    """Sentences of a paragraph: spaCy's rule-based sentencizer, then re-joined where it cut
    after an abbreviation ("Rom. 8:28", "cf. v. 3") or before a lower-case or digit start,
    and an item number it cut off ("… observed: 1.") moved to the item it numbers."""
    return list(_sentences(text.strip()))


# Splitting a long text into pieces asks for one paragraph's sentences several times.
@lru_cache(maxsize=16384)
def _sentences(text: str) -> tuple[str, ...]:
    if not text:
        return ()
    found: list[str] = []
    enumerator = ""  # a bare "5." the sentencizer cut off: it opens the next sentence
    for sentence in _sentencizer_cuts(text):
        if not sentence:
            continue
        if _BARE_ENUMERATOR.fullmatch(sentence):
            enumerator = f"{enumerator} {sentence}".strip()
        elif enumerator:
            found.append(f"{enumerator} {sentence}")
            enumerator = ""
        elif found and _continues(found[-1], sentence):
            found[-1] = f"{found[-1]} {sentence}"
        else:
            found.append(sentence)
    if enumerator:
        found.append(enumerator)
    # "… these rules are to be observed: 1." keeps its item number, and 'peace." "Thou' its
    # opening quote: each goes to the sentence it opens.
    for i in range(len(found) - 1):
        if tail := _TRAILING_ENUMERATOR.search(found[i]):
            found[i], found[i + 1] = found[i][: tail.start()], f"{tail[1]} {found[i + 1]}"
        elif quote := _TRAILING_OPEN_QUOTE.search(found[i]):
            found[i], found[i + 1] = found[i][: quote.start()], f"{quote[1]}{found[i + 1]}"
    return tuple(found)


# split_into_windows takes time in the square of its text's length (each cut lists the whole
# encoding again): 70 s for a 200,000-character run. Far past any real sentence (below it the
# windows are exactly split_into_windows's), a text is cut into parts this long first: 3 s.
_WINDOW_PART_CHARS = 10_000


def windows(text: str, max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """split_into_windows, a text past _WINDOW_PART_CHARS first cut at whitespace into parts no
    longer (the callers pack the windows again, so a part's short last one is not left alone)."""
    if len(text) <= _WINDOW_PART_CHARS:
        return split_into_windows(text, max_tokens)
    parts, text = [], text.strip()
    while len(text) > _WINDOW_PART_CHARS:
        cut = max(text.rfind(space, 0, _WINDOW_PART_CHARS) for space in " \n\t") + 1 or _WINDOW_PART_CHARS
        parts.append(text[:cut])
        text = text[cut:].lstrip()
    return [w for part in [*parts, text] for w in split_into_windows(part, max_tokens)]


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
            units.extend(windows(sentence, max_tokens))
    return pack(units, max_tokens, joiner="\n\n")


def last_sentence(text: str) -> str:
    found = sentences(text.split("\n\n")[-1])
    return found[-1] if found else ""


def with_trailing_overlap(pieces: list[str], max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """Repeat each piece's last sentence at the start of the next (a trailing-sentence
    overlap), when the result still fits; continuity at a boundary without much duplication."""
    out = pieces[:1]
    for previous, piece in zip(pieces, pieces[1:]):
        carried = last_sentence(previous)
        joined = f"{carried} {piece}" if carried else piece
        out.append(joined if carried and count_tokens([joined])[0] <= max_tokens else piece)
    return out


# ---------------------------------------------------------------- long sentences, even pieces

_CLAUSE_BREAK = re.compile(r"(?<=[;:])\s+")
_COMMA_BREAK = re.compile(r"(?<=,)\s+")


def clauses(sentence: str, max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """A sentence too long for max_tokens cut at semicolons and colons, a clause still too long
    at commas, and only a phrase still too long at word boundaries. Older prose runs one sentence
    well past the model's window (a catechism answer listing forty sins), and a semicolon is a
    truer break than the 254th word piece. The parts are not packed: the caller packs them."""
    parts: list[str] = []
    for clause in _CLAUSE_BREAK.split(sentence.strip()):
        if count_tokens([clause])[0] <= max_tokens:
            parts.append(clause)
            continue
        for phrase in _COMMA_BREAK.split(clause):
            parts.extend(windows(phrase, max_tokens))
    return [p for p in parts if p]


def even_pack(pieces: list[str], max_tokens: int, joiner: str = " ") -> list[str]:
    """As few groups as `pack` makes within max_tokens, but evenly sized: packed to the smallest
    cap that still gives that few groups, so a unit just over the limit splits into halves
    rather than into a full piece and a scrap."""
    fewest = len(pack(pieces, max_tokens, joiner))
    if fewest <= 1:
        return pack(pieces, max_tokens, joiner)
    low, high = max(count_tokens(pieces)), max_tokens
    while low < high:  # the group count only falls as the cap rises
        middle = (low + high) // 2
        if len(pack(pieces, middle, joiner)) <= fewest:
            high = middle
        else:
            low = middle + 1
    return pack(pieces, high, joiner)


def split_sentences_to_fit(text: str, max_tokens: int = MAX_TEXT_TOKENS) -> list[str]:
    """One paragraph's worth of text in evenly sized pieces within max_tokens, cut between
    sentences, and a sentence too long for the budget between its clauses (see `clauses`)."""
    text = text.strip()
    if count_tokens([text])[0] <= max_tokens:
        return [text]
    units: list[str] = []
    for sentence in sentences(text):
        fits = count_tokens([sentence])[0] <= max_tokens
        units.extend([sentence] if fits else clauses(sentence, max_tokens))
    return even_pack(units, max_tokens)
