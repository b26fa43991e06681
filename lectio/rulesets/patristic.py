"""Church Fathers: a work in books and chapters → small chunks tagged with what they cite,
what they are about and whom they argue against.

A patristic paragraph cites three passages, answers a heresy and makes its own argument in two
hundred words, so its vector is a blend. Two things sharpen retrieval: small chunks, and explicit
tags a query can filter on (`scripture_refs`, `topics`, `disputes_positions`).

Source convention (one work per file; author and work title come from the sources file):

- markdown: headings `# Book 14` and `## Chapter 28` (any heading level; arabic or upper-case
  roman numbers), optionally titled after a period, colon or dash:
  `## Chapter 28. Of the nature of the two cities`. A first level-1 heading before any text that
  is not a Book/Chapter heading is the work's title (used when the source gives none); any other
  heading (`## Preface`) names a division of its own.
- text: a paragraph that is a single line `BOOK XIV` or `CHAPTER 28` (the keyword in capitals,
  so a sentence that happens to open with "Chapter" is never taken for one), titled likewise.

Paragraphs are separated by blank lines. A work with no Book or Chapter lines is one division.

Size: a common guideline caps patristic chunks at 300 tokens, but the embedding model sees only
MAX_TEXT_TOKENS (254) word pieces, header included, so the model's limit is the cap that holds.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from lectio.rulesets.chunk import Chunk, ruleset_version, source_chunk_id
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.bible.refs import Ref
from lectio.bible.verses import cited_verse_ids
from lectio.settings import PROJECT_ROOT
from lectio.sources import Source, SourceError
from lectio.rulesets.headed import HeadedProse, Outline, fit_paragraphs

VOCABULARY = PROJECT_ROOT / "data" / "vocabulary" / "patristic_topics.yaml"

SEED_CAP_TOKENS = 300


def _file_digest(path: Path) -> str:
    # The vocabulary decides the tags, so it is part of the rules; a missing file still gives a
    # version here (the error is raised when a source is chunked, naming the source).
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    except OSError:
        return "missing"


RULES = {
    "divisions": "markdown headings / capitalised text lines 'Book N', 'Chapter N[. title]'",
    "unit": "division (chapter); whole paragraphs packed evenly; a long paragraph between sentences",
    "seed_cap_tokens": SEED_CAP_TOKENS,
    "max_tokens": min(SEED_CAP_TOKENS, MAX_TEXT_TOKENS),  # header included: the model's limit wins
    "header": "[author, work | Book b, Chapter c: title]",
    "overlap": "none: tags and refs describe a chunk's own text",
    "scripture_refs": "find_references over the body, ranges expanded to verse ids",
    "tags_from": "body without header, whole words and phrases, case-insensitive",
    "vocabulary": _file_digest(VOCABULARY),
    "chunk_ids": "<source id>/<division>_<piece>",
    "revision": 2,
}
RULESET = ruleset_version("patristic", RULES)


# ---------------------------------------------------------------- parsed structure


@dataclass(frozen=True)
class Division:
    book: int | None
    chapter: int | None
    title: str | None  # the chapter's title, or the name of an unnumbered division ("Preface")
    book_title: str | None
    paragraphs: tuple[str, ...]

    @property
    def locator(self) -> str:
        """"Book 14, Chapter 28: Of the two cities", "Preface", or "" for an undivided work."""
        parts = []
        if self.book is not None:
            parts.append(f"Book {self.book}")
        if self.chapter is not None:
            parts.append(f"Chapter {self.chapter}")
        located = ", ".join(parts)
        if self.title:
            located = f"{located}: {self.title}" if located else self.title
        return located

    @property
    def key(self) -> str:
        """The division's part of its chunk ids: "b14_c28", "b2_preface", "front"."""
        parts = []
        if self.book is not None:
            parts.append(f"b{self.book}")
        if self.chapter is not None:
            parts.append(f"c{self.chapter}")
        elif self.title:
            parts.append(re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")[:32] or "untitled")
        return "_".join(parts) or "front"


@dataclass(frozen=True)
class Work:
    author: str
    title: str
    divisions: tuple[Division, ...]


_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_NUMBER = r"(?P<number>\d+|(?-i:[IVXLCDM]+))"
_TITLE = r"(?:\s*[.:\u2013\u2014-]\s*(?P<title>\S.*?))?"
_HEADING_DIVISION = re.compile(rf"(?P<kind>book|chapter)\s+{_NUMBER}{_TITLE}\s*\.?", re.IGNORECASE)
_LINE_DIVISION = re.compile(rf"(?P<kind>BOOK|CHAPTER)\s+{_NUMBER}{_TITLE}\s*\.?")


def _number(source: Source, text: str) -> int:
    if text.isdigit():
        return int(text)
    if not _ROMAN.fullmatch(text):
        raise SourceError(source.id, f"{text!r} is not a roman number")
    values = [_ROMAN_VALUES[c] for c in text]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


class _Divisions(Outline[Division]):
    """A new Book or Chapter heading, or any other heading (a named division such as
    "Preface"), closes the division open and opens the next."""

    def __init__(self, source: Source):
        super().__init__(source)
        self.state = {"book": None, "book_title": None, "chapter": None, "title": None}

    def opens(self, heading: str, level: int) -> re.Match | None:
        return (_LINE_DIVISION if level == 0 else _HEADING_DIVISION).fullmatch(heading)

    def open(self, match: re.Match, heading: str) -> None:
        self.close()
        if match["kind"].lower() == "book":
            number = _number(self.source, match["number"])
            self.state.update(book=number, book_title=match["title"], chapter=None, title=None)
        else:
            self.state.update(chapter=_number(self.source, match["number"]), title=match["title"])

    def heading(self, heading: str) -> None:
        self.close()
        self.state.update(chapter=None, title=heading)

    def division(self, paragraphs: tuple[str, ...]) -> Division:
        return Division(paragraphs=paragraphs, **self.state)


# ---------------------------------------------------------------- topics and positions


class VocabularyError(ValueError):
    pass


@dataclass(frozen=True)
class Vocabulary:
    topics: dict[str, re.Pattern]
    positions: dict[str, re.Pattern]

    def tag(self, text: str) -> tuple[list[str], list[str]]:
        text = _normalise_quotes(text)
        return (
            sorted(k for k, pattern in self.topics.items() if pattern.search(text)),
            sorted(k for k, pattern in self.positions.items() if pattern.search(text)),
        )


def _normalise_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u02bc", "'")


def _term_pattern(terms: list[str]) -> re.Pattern:
    # Whole words and phrases: no word character may touch either end, and any run of
    # whitespace (a line break in the source) separates the words of a phrase.
    alternatives = [
        r"\s+".join(re.escape(word) for word in _normalise_quotes(term).split())
        for term in sorted(terms, key=len, reverse=True)
    ]
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


@lru_cache(maxsize=4)
def load_vocabulary(path: Path = VOCABULARY) -> Vocabulary:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise VocabularyError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise VocabularyError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or set(data) != {"topics", "positions"}:
        raise VocabularyError(f"{path} must hold exactly two mappings, 'topics' and 'positions'")
    compiled = {}
    for section in ("topics", "positions"):
        entries = data[section]
        if not isinstance(entries, dict) or not entries:
            raise VocabularyError(f"{path}: '{section}' must map each tag to its trigger terms")
        for tag, terms in entries.items():
            if not isinstance(terms, list) or not terms or not all(isinstance(t, str) and t.strip() for t in terms):
                raise VocabularyError(f"{path}: {section} tag {tag!r} needs a non-empty list of terms")
        compiled[section] = {str(tag): _term_pattern(terms) for tag, terms in entries.items()}
    return Vocabulary(**compiled)


# ---------------------------------------------------------------- chunks


def chunk(source: Source, work: Work) -> list[Chunk]:
    try:
        vocabulary = load_vocabulary()
    except VocabularyError as exc:
        raise SourceError(source.id, f"patristic vocabulary: {exc}") from None
    extra = {k: v for k, v in source.metadata.items() if k in ("tradition", "tier", "translation")}
    chunks: list[Chunk] = []
    for division in work.divisions:
        locator = division.locator
        header = f"[{work.author}, {work.title}" + (f" | {locator}]" if locator else "]")
        budget = RULES["max_tokens"] - count_tokens([header])[0]
        if budget < 64:
            raise SourceError(source.id, f"the header {header!r} leaves only {budget} tokens for text")
        bodies = fit_paragraphs(division.paragraphs, budget)
        texts = [f"{header}\n{body}" for body in bodies]
        for part, (body, text, tokens) in enumerate(zip(bodies, texts, count_tokens(texts)), start=1):
            refs = cited_verse_ids(body)
            topics, positions = vocabulary.tag(body)
            whole = len(bodies) == 1
            chunks.append(
                Chunk.for_source(
                    source,
                    RULESET,
                    chunk_id=source_chunk_id(source, f"{division.key}_{part:02d}"),
                    granularity=("chapter" if division.chapter is not None else "section") if whole else "paragraph",
                    text=text,
                    tokens=tokens,
                    breadcrumb=" › ".join(p for p in (work.title, locator) if p),
                    refs=refs,
                    ordinal=Ref.from_id(refs[0]).ordinal if refs else None,
                    title=work.title,
                    metadata={
                        "author": work.author,
                        "work": work.title,
                        "book": division.book,
                        "book_title": division.book_title,
                        "chapter": division.chapter,
                        "chapter_title": division.title,
                        "part": part,
                        "parts": len(bodies),
                        "scripture_refs": list(refs),
                        "topics": topics,
                        "disputes_positions": positions,
                        **extra,
                    },
                )
            )
    return chunks


class Patristic(HeadedProse[Work, Division], chunk=chunk):
    name = "patristic"
    versions = {"default": RULESET}
    granularities = frozenset({"chapter", "section", "paragraph"})
    described = "a patristic source"
    work = Work
    outline = _Divisions

    def repeated(self, division: Division) -> str:
        return f"division {division.locator!r} occurs more than once; numbering must be unique"

    def units(self, work: Work) -> int:
        return len(work.divisions)


PATRISTIC = Patristic()
read, parse = PATRISTIC.read, PATRISTIC.parse
