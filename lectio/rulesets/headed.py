"""Headed prose: a work by one author read as headings and paragraphs (the patristic and modern
rulesets), and the packing of paragraphs into bodies that the theses ruleset shares.

The frame is the same for every such work: an 'author' the chunks are headed with, headings that
open the work's divisions (each ruleset says which), a first level-1 heading above everything
taken for the work's title, paragraphs collected under the division open, and a division key
that must not repeat. A ruleset of this shape states only its own headings and chunks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable, ClassVar, Generic, TypeVar

from lectio.readers.raw import RawText
from lectio.rulesets import documents
from lectio.rulesets.base import Ruleset
from lectio.rulesets.blocks import Prose, blocks, first_repeated
from lectio.rulesets.textsplit import even_pack, split_sentences_to_fit
from lectio.sources import Source, SourceError

W = TypeVar("W")  # the work: author, title and its divisions
D = TypeVar("D")  # one division of it (a chapter, a passage), with a `key` unique in the work


def fit_paragraphs(paragraphs: Iterable[str], budget: int) -> list[str]:
    """Bodies within `budget` word pieces: whole paragraphs where they fit, a longer paragraph
    cut evenly between sentences, and the units packed evenly (so no scrap is left at the end).
    Paragraphs are joined with a blank line, so a body still shows where they break."""
    units: list[str] = []
    for paragraph in paragraphs:
        units.extend(split_sentences_to_fit(paragraph, budget))
    return even_pack(units, budget, joiner="\n\n")


class Outline(ABC, Generic[D]):
    """Collects one work's divisions as its headings and paragraphs arrive, in reading order: the
    paragraphs since a division opened are that division's."""

    def __init__(self, source: Source):
        self.source = source
        self.paragraphs: list = []
        self.closed: list[D] = []

    @abstractmethod
    def opens(self, heading: str, level: int) -> Any | None:
        """What `heading` opens (a chapter number, a passage), or None when it opens no division;
        level 0 is a plain-text line standing alone."""

    @abstractmethod
    def open(self, found: Any, heading: str) -> None:
        """Closes the division open (`close`) and opens the one `found`."""

    @abstractmethod
    def heading(self, heading: str) -> None:
        """Any other heading (a named division, a section inside a passage)."""

    @abstractmethod
    def division(self, paragraphs: tuple) -> D:
        """The division open, holding `paragraphs`."""

    def paragraph(self, text: str) -> None:
        self.paragraphs.append(text)

    def close(self) -> None:
        if self.paragraphs:
            self.closed.append(self.division(tuple(self.paragraphs)))
            self.paragraphs.clear()

    def divisions(self) -> list[D]:
        """Every division that holds text, the last one closed."""
        self.close()
        return self.closed


class HeadedProse(Ruleset[W], Generic[W, D]):
    described: ClassVar[str]  # how an error names the source: "a patristic source"
    # Builds the work from its author, title and divisions.
    work: ClassVar[Callable[[str, str, tuple], Any]]
    outline: ClassVar[Callable[[Source], Outline]]  # a fresh one for each work parsed

    def read(self, source: Source, corpus_dir: Path | None = None) -> RawText:
        return documents.read(source, corpus_dir)  # a UTF-8 file, with the documents reader's errors

    @abstractmethod
    def repeated(self, division: D) -> str:
        """The problem with a work that has `division`'s key twice."""

    def parse(self, source: Source, raw: RawText) -> W:
        author = source.metadata.get("author")
        if not author:
            raise SourceError(source.id, f"{self.described} needs an 'author' (it heads every chunk)")
        outline = self.outline(source)
        file_title: str | None = None
        started = False  # a division or some text has been seen
        markdown = source.format == "markdown"
        for block in blocks(raw.payload, markdown, heads=lambda line: outline.opens(line, 0)):
            if isinstance(block, Prose):
                outline.paragraph(block.text)
            elif (found := outline.opens(block.text, block.level)) is not None:
                outline.open(found, block.text)
            elif not started and file_title is None and block.level == 1:
                file_title = block.text  # "# On Grace and the Will" above everything else
            else:
                outline.heading(block.text)
            started = True
        divisions = outline.divisions()
        if not divisions:
            raise SourceError(source.id, f"{source.path} has no paragraphs of text")
        if (key := first_repeated([d.key for d in divisions])) is not None:
            raise SourceError(source.id, self.repeated(next(d for d in divisions if d.key == key)))
        title = source.metadata.get("title") or file_title or source.id
        return self.work(str(author), str(title), tuple(divisions))
