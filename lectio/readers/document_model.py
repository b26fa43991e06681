"""The document model of ordinary documents (policies, price lists, guides), whatever their
format: blocks (headings, paragraphs, lists, tables) built into sections under their heading
path, each section's blocks grouped into units. A list or table takes the paragraph ending in ':'
that introduces it; a rule takes the exceptions that follow it (EXCEPTION_OPENERS), so that no
chunker can separate them. `lectio.readers.documents` lexes markdown, text and HTML into the
blocks; `lectio.rulesets.documents` (the chunking ruleset, whose version covers EXCEPTION_OPENERS) cuts
chunks from the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

from lectio.sources import Source

# A paragraph (or a list's or table's introduction) opening with one of these qualifies the block
# before it, and is kept in the same chunk (split a rule from its exception and both halves
# retrieve well and answer wrongly). Matched case-insensitively after leading emphasis.
EXCEPTION_OPENERS = (
    "except",
    "exception",
    "exceptions",
    "however,",
    "unless",
    "notwithstanding",
    "this does not apply",
    "this rule does not apply",
    "this policy does not apply",
    "these rules do not apply",
    "the only exception",
    "with the exception of",
)


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class ItemList:
    items: tuple[str, ...]
    intro: str | None = None  # the paragraph ending in ':' that introduces the list
    start: int | None = None  # first number of an ordered list; None for bullets


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    intro: str | None = None  # the paragraph ending in ':' before it, and/or its caption


Block = Union[Paragraph, ItemList, Table]


@dataclass(frozen=True)
class Unit:
    """A block with the exceptions that follow and qualify it: never separated."""

    block: Block
    exceptions: tuple[Block, ...] = ()


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]  # headings from the top; () for text before the first heading
    units: tuple[Unit, ...]


@dataclass(frozen=True)
class Document:
    title: str
    sections: tuple[Section, ...]  # in document order; only sections with content
    metadata: dict = field(default_factory=dict)  # effective_date, scope, author: JSON-able

    def __len__(self) -> int:
        """Blocks in the document (paragraphs, lists, tables, exceptions): what the
        parsed-structure asset reports for a document."""
        return sum(1 + len(u.exceptions) for s in self.sections for u in s.units)


# ---------------------------------------------------------------- building


def build(source: Source, events: list, front: dict, title_hint: str | None) -> Document:
    """Events of any format → sections with their units (intros and exceptions attached)."""
    headings = [e for e in events if isinstance(e, Heading)]
    declared = front.get("title") or title_hint  # front matter or HTML <title>
    own_title = declared
    # Without one, a lone top heading opening the document names it ("# Staff Policy").
    if not own_title and headings and events[0] is headings[0] and sum(h.level == headings[0].level for h in headings) == 1:
        own_title = headings[0].text
    title = source.metadata.get("title") or own_title or source.id
    # A first heading repeating the title is the title, not a section; a lone top heading that
    # differs from the source's title stays in the path ("Guide › Leading a group › …").
    title_words = {t.casefold() for t in (title, declared) if t}

    sections: list[Section] = []
    stack: list[tuple[int, str | None]] = []  # (level, text); None for the heading that is the title
    blocks: list[Block] = []

    def close():
        if blocks:
            path = tuple(t for _, t in stack if t is not None)
            sections.append(Section(path, _units(blocks)))
            blocks.clear()

    for event in events:
        if isinstance(event, Heading):
            close()
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            is_title = not sections and not stack and event.text.casefold() in title_words
            stack.append((event.level, None if is_title else event.text))
        else:
            blocks.append(event)
    close()

    metadata = {k: front[k] for k in ("effective_date", "scope", "author") if front.get(k)}
    metadata.update({k: str(source.metadata[k]) for k in ("effective_date", "scope", "author") if source.metadata.get(k)})
    return Document(title, tuple(sections), metadata)


def _units(blocks: list[Block]) -> tuple[Unit, ...]:
    # A paragraph ending in ':' introduces the list or table right after it.
    merged: list[Block] = []
    for block in blocks:
        previous = merged[-1] if merged else None
        if isinstance(block, (ItemList, Table)) and isinstance(previous, Paragraph) and previous.text.endswith(":"):
            intro = previous.text if not block.intro else f"{previous.text}\n{block.intro}"
            merged[-1] = _with_intro(block, intro)
        else:
            merged.append(block)
    units: list[Unit] = []
    for block in merged:
        if units and is_exception(_opening(block)):
            units[-1] = Unit(units[-1].block, units[-1].exceptions + (block,))
        else:
            units.append(Unit(block))
    return tuple(units)


def _with_intro(block: Block, intro: str) -> Block:
    if isinstance(block, ItemList):
        return ItemList(block.items, intro, block.start)
    return Table(block.header, block.rows, intro)


def _opening(block: Block) -> str:
    return block.text if isinstance(block, Paragraph) else (block.intro or "")


_EXCEPTION = re.compile(
    r"^[\s*_>]*(?:" + "|".join(re.escape(o) + (r"\b" if o[-1].isalnum() else "") for o in EXCEPTION_OPENERS) + ")",
    re.IGNORECASE,
)


def is_exception(text: str) -> bool:
    """Whether a paragraph opens as a qualification of what precedes it (EXCEPTION_OPENERS)."""
    return bool(_EXCEPTION.match(text))
