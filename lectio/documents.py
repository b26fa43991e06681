"""Plain-text and markdown documents: read, split into sections and paragraphs, chunk.

A first ruleset: headings give the section path, a paragraph is never split, consecutive short
paragraphs of one section are packed together up to a size target, and the breadcrumb
(title › section path) is both stored and written into the embedded text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lectio.chunk import Chunk, ruleset_version
from lectio.model import count_tokens
from lectio.raw import RawText, hash_parts
from lectio.sources import Source, SourceError

RULES = {"unit": "paragraph", "pack_to_tokens": 200, "breadcrumb_in_text": True, "revision": 1}
RULESET = ruleset_version("document", RULES)

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Block:
    section: tuple[str, ...]  # heading path above the paragraph
    text: str


def read(source: Source, corpus_dir=None) -> RawText:
    path = source.path
    if path is None:
        raise SourceError(source.id, f"format {source.format!r} needs a 'path'")
    if not path.is_file():
        raise SourceError(source.id, f"file {path} does not exist")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(source.id, f"file {path} is not valid UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise SourceError(source.id, f"file {path} is empty")
    return RawText(source.id, hash_parts([text]), text, units=len(text.splitlines()))


def parse(source: Source, raw: RawText) -> list[Block]:
    markdown = source.format == "markdown"
    blocks, section, paragraph = [], [], []

    def flush():
        if paragraph:
            blocks.append(Block(tuple(section), " ".join(paragraph)))
            paragraph.clear()

    for line in raw.payload.splitlines():
        heading = _HEADING.match(line) if markdown else None
        if heading:
            flush()
            level = len(heading.group(1))
            del section[level - 1 :]
            section.extend([""] * (level - 1 - len(section)))
            section.append(heading.group(2))
        elif line.strip():
            paragraph.append(line.strip())
        else:
            flush()
    flush()
    return blocks


def chunk(source: Source, blocks: list[Block]) -> list[Chunk]:
    groups: list[tuple[tuple[str, ...], list[str]]] = []
    sizes = count_tokens([b.text for b in blocks])
    group_tokens = 0
    for block, size in zip(blocks, sizes):
        same_section = groups and groups[-1][0] == block.section
        if same_section and group_tokens + size <= RULES["pack_to_tokens"]:
            groups[-1][1].append(block.text)
            group_tokens += size
        else:
            groups.append((block.section, [block.text]))
            group_tokens = size
    texts, crumbs = [], []
    for section, paragraphs in groups:
        crumb = " › ".join([source.title, *[s for s in section if s]])
        crumbs.append(crumb)
        texts.append(f"{crumb}\n\n" + "\n\n".join(paragraphs))
    tokens = count_tokens(texts)
    return [
        Chunk(
            chunk_id=f"{source.id}_{i + 1:04d}",
            source_id=source.id,
            kind=source.kind,
            granularity="section",
            text=text,
            tokens=n,
            acl=source.acl,
            ruleset=RULESET,
            breadcrumb=crumb,
            title=source.title,
            metadata={k: v for k, v in source.metadata.items() if k in ("effective_date", "scope", "author")},
        )
        for i, (text, crumb, n) in enumerate(zip(texts, crumbs, tokens))
    ]
