"""A plain-text or Markdown work read as headings and paragraphs, for the rulesets whose
structure is a heading followed by prose (the patristic and modern commentary rulesets)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from lectio.rulesets.textsplit import break_overlong_words

_MARKDOWN_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Heading:
    text: str
    level: int  # a Markdown heading's number of '#'; 0 for a plain-text heading line


@dataclass(frozen=True)
class Prose:
    text: str  # its lines joined by single spaces


def blocks(text: str, markdown: bool, heads: Callable[[str], bool]) -> Iterator[Heading | Prose]:
    """Headings and paragraphs in reading order. In Markdown a heading is a '#' line; in plain
    text it is a line standing alone (a blank line, or nothing, above and below) for which
    `heads(line)` is true. A word too long for the tokenizer is cut first, so every size a
    ruleset measures afterwards is true (break_overlong_words)."""
    raw_lines = break_overlong_words(text.lstrip("\ufeff")).splitlines()
    lines: list[str] = []
    for i, line in enumerate(raw_lines):
        stripped = line.strip()
        marked = _MARKDOWN_HEADING.match(line) if markdown else None
        alone = not markdown and stripped and not lines and not (
            raw_lines[i + 1].strip() if i + 1 < len(raw_lines) else "")
        if marked or (alone and heads(stripped)):
            if lines:
                yield Prose(" ".join(lines))
                lines.clear()
            yield Heading(marked.group(2), len(marked.group(1))) if marked else Heading(stripped, 0)
        elif stripped:
            lines.append(stripped)
        elif lines:
            yield Prose(" ".join(lines))
            lines.clear()
    if lines:
        yield Prose(" ".join(lines))


def first_repeated(keys: list) -> object | None:
    """The smallest key that occurs more than once, or None: a passage or division a text
    numbers twice would give two chunks one id."""
    seen, repeated = set(), set()
    for key in keys:
        (repeated if key in seen else seen).add(key)
    return min(repeated) if repeated else None
