"""Ordinary documents (policies, price lists, guides) in markdown, plain text or HTML:
read → document model → chunks.

Chunking is document modelling. Each format is lexed into the same blocks (headings, paragraphs,
lists, tables), which are built into a document model: sections under their heading
path, a list with the sentence that introduces it, a table with its header row, and a rule with
the exceptions that follow it. Chunks are cut from that model, structure first and size inside
structure:

- a section that fits the model is one chunk, however short (the breadcrumb rescues it);
- a chunk never spans two sections, and a paragraph is never split unless it alone is too long;
- a list or table too long for one chunk repeats its introduction (and a table its header row)
  on every chunk; a rule and its exceptions are one unit, kept in one chunk;
- flowing prose too long for one chunk is split where the topic turns (sentence embeddings,
  cut where adjacent similarity falls below a percentile of that unit's), and only then to the
  model's limit;
- the breadcrumb (title › section path | effective date | scope) is the first line of every
  chunk's text, and stored in `breadcrumb` and `metadata`;
- where a heading's whole subtree of several sections fits the model, it is also emitted as a
  "document-section" parent chunk and its section chunks point to it (retrieve the child,
  return the parent).

This module is the chunking ruleset; `lectio.readers.documents` lexes each format into blocks and
`lectio.readers.document_model` builds the model from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, is_dataclass, replace


from lectio.rulesets.chunk import Chunk, ruleset_version
from lectio.readers.document_model import (
    EXCEPTION_OPENERS,
    Block,
    Document,
    ItemList,
    Paragraph,
    Section,
    Table,
    Unit,
    build,
    is_exception,
)
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens, fp32_model
from lectio.readers.raw import RawText, hash_parts, read_text_file
from lectio.readers.documents import lex
from lectio.bible.refs import Ref
from lectio.rulesets.base import Ruleset
from lectio.sources import Source, SourceError
from lectio.rulesets.semantic_split import fit_sentences, semantic_split, token_size
from lectio.rulesets.textsplit import break_overlong_words, sentences
from lectio.bible.verses import cited_verse_ids

RULES = {
    "formats": ["markdown", "text", "html"],
    "blocks": "heading, paragraph, list (+ introducing paragraph ending ':'), table (+ header row)",
    "exception_openers": list(EXCEPTION_OPENERS),
    # A section that fits the model is one chunk whatever its size; larger sections are cut into
    # structural units, and neighbouring small units of one section are packed up to this many
    # word pieces, breadcrumb included. 200 because the model was trained on inputs of at most
    # 128 pieces and dilutes past that, fact-lookup chunks are commonly put at 200-400 tokens, and
    # the hard window (254) leaves no room for 400: 200 keeps a chunk focused while a typical
    # policy paragraph (60-120 pieces) plus its neighbour or its exception still fits.
    "pack_target_tokens": 200,
    "max_tokens": MAX_TEXT_TOKENS,
    # An introduction longer than this is repeated only by its last sentence on later chunks.
    "intro_repeat_max_tokens": 60,
    "table_header_on_every_chunk": True,
    "semantic": {"model": fp32_model().id, "percentile": 20, "window_sentences": 2, "min_tokens": 40},
    "parent": "document-section: a heading subtree of >= 2 sections that fits the model",
    "breadcrumb": "title › section path | effective DATE | scope: SCOPE",
    "overlong_words": "a word past the tokenizer's 100 characters is cut every 50 by a space",
    "revision": 2,
}
RULESET = ruleset_version("document", RULES)

SEPARATOR = " › "


# ---------------------------------------------------------------- read


def read(source: Source, corpus_dir=None) -> RawText:
    text = read_text_file(source)
    return RawText(source.id, hash_parts([text]), text, units=len(text.splitlines()))


# ---------------------------------------------------------------- parse


def parse(source: Source, raw: RawText) -> Document:
    title_hint, front, events = lex(source, raw.payload)
    document = _readable(build(source, events, front, title_hint))
    if not document.sections:
        raise SourceError(source.id, "has headings but no text to index")
    return document


def _readable(value):
    """The document model with every string's overlong words cut (break_overlong_words): after
    lexing, so a cut never lands inside markup, and before sizing, so every size is true."""
    if isinstance(value, str):
        return break_overlong_words(value)
    if isinstance(value, tuple):
        return tuple(_readable(v) for v in value)
    if isinstance(value, dict):
        return {k: _readable(v) for k, v in value.items()}
    if is_dataclass(value):
        return replace(value, **{f.name: _readable(getattr(value, f.name)) for f in fields(value)})
    return value


# ---------------------------------------------------------------- chunk


@dataclass
class _Piece:
    """A chunk body before the breadcrumb: text, its size, and what it holds."""

    text: str
    tokens: int
    packable: bool  # may be packed with neighbouring small pieces of the same section
    how: str  # "section" (the whole section), "structure", "semantic"
    blocks: tuple[str, ...] = ()
    rows: tuple[int, int] | None = None  # table rows (1-based) the piece holds
    # The table's header row, recorded so the index build can check the chunk still holds it
    # without parsing the document again.
    table_header: str | None = None


def chunk(source: Source, document: Document) -> list[Chunk]:
    target = RULES["pack_target_tokens"]
    specs: list[dict] = []
    slugs: dict[str, int] = {}
    for order, section in enumerate(document.sections):
        crumb = breadcrumb(document, section.path)
        budget = MAX_TEXT_TOKENS - _size(crumb)
        if budget < MAX_TEXT_TOKENS // 2:
            raise SourceError(source.id, f"heading path {crumb!r} leaves too little room for text in the model's window")
        pieces = _section_pieces(section, budget, target - _size(crumb))
        slug = _unique(_slug(section.path), slugs)
        for number, piece in enumerate(pieces, start=1):
            specs.append(
                {
                    "chunk_id": f"{source.id}/{slug}/{number}",
                    "granularity": "section",
                    "text": f"{crumb}\n\n{piece.text}",
                    "breadcrumb": crumb,
                    "path": section.path,
                    "order": order,
                    "metadata": {
                        "split": piece.how,
                        "blocks": list(piece.blocks),
                        **({"table_rows": list(piece.rows), "table_header": piece.table_header} if piece.rows else {}),
                        "part": number,
                        "parts": len(pieces),
                    },
                }
            )
    specs = _with_parents(source, document, specs)
    return _to_chunks(source, document, specs)


def breadcrumb(document: Document, path: tuple[str, ...]) -> str:
    """Title › section path, then the effective date and scope where the source has them:
    the first line of every chunk, because filters need the fields and the model the words."""
    line = SEPARATOR.join([document.title, *path])
    if date := document.metadata.get("effective_date"):
        line += f" | effective {date}"
    if scope := document.metadata.get("scope"):
        line += f" | scope: {scope}"
    return line


# -------------------------------------------- one section


def _section_pieces(section: Section, budget: int, target: int) -> list[_Piece]:
    rendered = [_render_unit(u) for u in section.units]
    whole = "\n\n".join(rendered)
    if _size(whole) <= budget:
        return [_Piece(whole, _size(whole), False, "section", _kinds(section.units))]
    pieces: list[_Piece] = []
    prose: list[str] = []  # a run of plain paragraphs, split by topic if too long together

    def end_prose():
        if prose:
            text = "\n\n".join(prose)
            if _size(text) <= budget:
                pieces.append(_Piece(text, _size(text), True, "structure", ("paragraph",)))
            else:
                pieces.extend(_Piece(t, _size(t), False, "semantic", ("paragraph",)) for t in semantic_split(prose, budget, RULES["semantic"]))
            prose.clear()

    for unit, text in zip(section.units, rendered):
        if isinstance(unit.block, Paragraph) and not unit.exceptions:
            prose.append(unit.block.text)
            continue
        end_prose()
        if _size(text) <= budget:
            pieces.append(_Piece(text, _size(text), True, "structure", _kinds([unit])))
        else:
            pieces.extend(_unit_pieces(unit, budget, target))
    end_prose()
    return _pack_pieces(pieces, target)


def _kinds(units) -> tuple[str, ...]:
    kinds = []
    for unit in units:
        for block in (unit.block, *unit.exceptions):
            kinds.append(type(block).__name__.lower().replace("itemlist", "list"))
        if unit.exceptions:
            kinds.append("exception")
    return tuple(dict.fromkeys(kinds))


def _pack_pieces(pieces: list[_Piece], target: int) -> list[_Piece]:
    """Neighbouring packable pieces join up to the target, evenly; the others stand alone."""
    out: list[_Piece] = []
    run: list[_Piece] = []

    def end_run():
        for group in _even_groups([p.tokens for p in run], target):
            members = [run[k] for k in group]
            text = "\n\n".join(p.text for p in members)
            blocks = tuple(dict.fromkeys(b for p in members for b in p.blocks))
            out.append(_Piece(text, _size(text), False, "structure", blocks))
        run.clear()

    for piece in pieces:
        if piece.packable:
            run.append(piece)
        else:
            end_run()
            out.append(piece)
    end_run()
    return out


def _even_groups(sizes: list[int], cap: int) -> list[list[int]]:
    """Consecutive indices grouped greedily within cap, into as few groups as greedy packing
    gives but evened out: packed to the smallest cap that keeps that count, so the last group
    is not a scrap. Sizes add up because pieces are joined by whitespace, which costs no pieces."""

    def greedy(limit: int) -> list[list[int]]:
        groups: list[list[int]] = []
        used = 0
        for k, size in enumerate(sizes):
            if groups and used + size <= limit:
                groups[-1].append(k)
                used += size
            else:
                groups.append([k])
                used = size
        return groups

    if not sizes:
        return []
    fewest = greedy(cap)
    low = max(max(sizes), -(-sum(sizes) // len(fewest)))
    for limit in range(low, cap + 1):
        groups = greedy(limit)
        if len(groups) <= len(fewest):
            return groups
    return fewest


# -------------------------------------------- a unit too long for one chunk


def _unit_pieces(unit: Unit, budget: int, target: int) -> list[_Piece]:
    """A list, table or rule too long for one chunk, in pieces that keep what gives them meaning.
    Its exceptions join its last piece, or, where that is full, open a piece of their own that
    repeats the rule's lead (last sentence, list introduction, table header) before them."""
    pieces = _block_pieces(unit.block, budget, target)
    lead = _lead(unit.block)
    for exception in unit.exceptions:
        text = _render(exception)
        joined = f"{pieces[-1].text}\n\n{text}"
        if _size(joined) <= budget:
            last = pieces[-1]
            pieces[-1] = _Piece(joined, _size(joined), False, last.how, (*last.blocks, "exception"), last.rows,
                                 last.table_header)
            continue
        with_lead = f"{lead}\n\n{text}"
        if _size(with_lead) <= budget:
            pieces.append(_Piece(with_lead, _size(with_lead), False, "structure", ("exception",)))
        else:
            pieces.extend(_block_pieces(exception, budget, target))
    return pieces


def _block_pieces(block: Block, budget: int, target: int) -> list[_Piece]:
    if isinstance(block, Paragraph):
        return [_Piece(t, _size(t), False, "semantic", ("paragraph",)) for t in semantic_split([block.text], budget, RULES["semantic"])]
    if isinstance(block, ItemList):
        return _repeated_lead_pieces(block.intro, None, _item_groups(block), budget, target, "list")
    header = row_text(block.header)
    rows = [(row_text(row), (k, k)) for k, row in enumerate(block.rows, start=1)]
    return _repeated_lead_pieces(block.intro, header, rows, budget, target, "table")


def _item_groups(block: ItemList) -> list[tuple[str, tuple[int, int]]]:
    """Rendered items, an item that is an exception ("Except …") kept with the item before it."""
    groups: list[tuple[str, tuple[int, int]]] = []
    for k, item in enumerate(block.items, start=1):
        line = f"{_marker(block, k)} {item}"
        if groups and is_exception(item):
            text, (first, _) = groups[-1]
            groups[-1] = (f"{text}\n{line}", (first, k))
        else:
            groups.append((line, (k, k)))
    return groups


def _repeated_lead_pieces(intro, header, lines, budget, target, kind) -> list[_Piece]:
    """Lines (items or rows) packed evenly under a lead repeated on every piece: the list's
    introduction, or the table's introduction and header row. A long introduction is given whole
    on the first piece and by its last sentence on the others; one too long to share a piece with
    any line stands before them on its own."""
    pieces: list[_Piece] = []
    later_intro = intro
    if intro and _size(intro) > RULES["intro_repeat_max_tokens"]:
        later_intro = (sentences(intro) or [intro])[-1]
    if later_intro and _size(later_intro) > budget // 3:
        later_intro = None  # one enormous sentence: repeating it would crowd out the lines
    first_lead = "\n".join(x for x in (intro, header) if x)
    later_lead = "\n".join(x for x in (later_intro, header) if x)
    if _size(first_lead) > budget // 2:
        pieces.extend(_Piece(t, _size(t), False, "semantic", ("paragraph",)) for t in semantic_split([intro], budget, RULES["semantic"]))
        first_lead = later_lead
    room = budget - max(_size(first_lead), _size(later_lead))
    cap = min(room, max(target - _size(later_lead), room // 2))
    units: list[tuple[str, tuple[int, int]]] = []
    for text, span in lines:
        if _size(text) <= room:
            units.append((text, span))
        else:  # one item or row longer than the window: cut it, each part still under its lead
            units.extend((part, span) for part in fit_sentences(text, room))
    for number, group in enumerate(_even_groups([_size(t) for t, _ in units], cap)):
        body = "\n".join(units[k][0] for k in group)
        lead = first_lead if number == 0 else later_lead
        text = f"{lead}\n{body}" if lead else body
        span = (units[group[0]][1][0], units[group[-1]][1][1])
        table = kind == "table"
        pieces.append(_Piece(text, _size(text), False, "structure", (kind,), span if table else None,
                             header if table else None))
    return pieces


def _lead(block: Block) -> str:
    if isinstance(block, Paragraph):
        return (sentences(block.text) or [block.text])[-1]
    if isinstance(block, Table):
        return "\n".join(x for x in (block.intro, row_text(block.header)) if x)
    return block.intro or ""


# -------------------------------------------- rendering


def _marker(block: ItemList, number: int) -> str:
    return "-" if block.start is None else f"{block.start + number - 1}."


def _render(block: Block) -> str:
    if isinstance(block, Paragraph):
        return block.text
    if isinstance(block, ItemList):
        body = "\n".join(f"{_marker(block, k)} {item}" for k, item in enumerate(block.items, start=1))
    else:
        body = "\n".join(row_text(row) for row in (block.header, *block.rows))
    return f"{block.intro}\n{body}" if block.intro else body


def row_text(cells: tuple[str, ...]) -> str:
    # Cells joined by " | ", without the outer pipes and alignment row: each "|" or "-" is a
    # word piece of its own, and the header row already says where the columns are.
    return " | ".join(cells).rstrip(" |")


def _render_unit(unit: Unit) -> str:
    return "\n\n".join(_render(b) for b in (unit.block, *unit.exceptions))


_size = token_size


# -------------------------------------------- parents, ids, chunks


def _with_parents(source: Source, document: Document, specs: list[dict]) -> list[dict]:
    """A heading subtree of several sections that fits the model whole becomes a
    "document-section" chunk; each of its section chunks points to the largest such parent."""
    paths = [s.path for s in document.sections]
    candidates: dict[tuple[str, ...], list[int]] = {}
    for spec_index, spec in enumerate(specs):
        for depth in range(len(spec["path"]) + 1):
            candidates.setdefault(spec["path"][:depth], []).append(spec_index)
    parents: list[dict] = []
    best: dict[int, tuple[int, int, str]] = {}  # spec index → (covered, depth, parent id)
    slugs: dict[str, int] = {}
    for prefix, members in candidates.items():
        sections = [s for s, p in zip(document.sections, paths) if p[: len(prefix)] == prefix]
        if len(sections) < 2:
            continue
        crumb = breadcrumb(document, prefix)
        body = []
        for section in sections:
            relative = section.path[len(prefix) :]
            content = "\n\n".join(_render_unit(u) for u in section.units)
            body.append(f"{SEPARATOR.join(relative)}\n{content}" if relative else content)
        text = f"{crumb}\n\n" + "\n\n".join(body)
        if _size(text) > MAX_TEXT_TOKENS:
            continue
        parent_id = f"{source.id}/{_unique(_slug(prefix), slugs)}/whole"
        parents.append(
            {
                "chunk_id": parent_id,
                "granularity": "document-section",
                "text": text,
                "breadcrumb": crumb,
                "path": prefix,
                "order": min(specs[m]["order"] for m in members),
                "metadata": {"split": "subtree", "sections": len(sections)},
            }
        )
        for m in members:
            # The parent covering most sections wins; between equals, the deeper heading.
            rank = (len(members), len(prefix), parent_id)
            if m not in best or rank[:2] > best[m][:2]:
                best[m] = rank
    used = {rank[2] for rank in best.values()}
    for m, rank in best.items():
        specs[m]["parent_id"] = rank[2]
    kept = [p for p in parents if p["chunk_id"] in used]
    # Parents go before their first child, in document order.
    ordered = sorted([(p["order"], 0, i, p) for i, p in enumerate(kept)] + [(s["order"], 1, i, s) for i, s in enumerate(specs)],
                     key=lambda t: t[:3])
    return [t[3] for t in ordered]


def _slug(path: tuple[str, ...]) -> str:
    if not path:
        return "_"
    return "/".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-")[:40] or "-" for p in path)


def _unique(slug: str, seen: dict[str, int]) -> str:
    """Two sections with the same headings ("Notes" twice) get "notes" and "notes~2"."""
    seen[slug] = seen.get(slug, 0) + 1
    return slug if seen[slug] == 1 else f"{slug}~{seen[slug]}"


def _to_chunks(source: Source, document: Document, specs: list[dict]) -> list[Chunk]:
    tokens = count_tokens([s["text"] for s in specs])
    chunks = []
    for spec, n in zip(specs, tokens):
        refs = cited_verse_ids(spec["text"])  # ranges expanded with real verse counts
        chunks.append(
            Chunk.for_source(
                source,
                RULESET,
                chunk_id=spec["chunk_id"],
                granularity=spec["granularity"],
                text=spec["text"],
                tokens=n,
                breadcrumb=spec["breadcrumb"],
                parent_id=spec.get("parent_id"),
                refs=refs,
                ordinal=Ref.from_id(refs[0]).ordinal if refs else None,
                title=document.title,
                metadata={"section_path": list(spec["path"]), **document.metadata, **spec["metadata"]},
            )
        )
    return chunks


class Documents(Ruleset[Document], read=read, parse=parse, chunk=chunk):
    name = "document"
    versions = {"default": RULESET}
    granularities = frozenset({"document-section", "section"})


DOCUMENTS = Documents()
