"""Numbered theses in the shape of a disputation (Luther's Heidelberg Disputation, for
example): each thesis with its proof is one chunk.

The text file holds an optional preface, then theses, each a paragraph opening with its number
("7. The law …"), followed by a paragraph opening "Proof:" that may run on over several
paragraphs. The work and author come from the source (`title`, `author`) and are rendered into
a context header: `[<work> | <author> | Thesis 7]`. A thesis too long for the model keeps its
header and statement on every piece and splits its proof between sentences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lectio.rulesets.chunk import Chunk, ruleset_version, source_chunk_id
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.readers.raw import RawText, hash_parts, read_text_file
from lectio.rulesets.westminster import refs_of
from lectio.sources import Source, SourceError
from lectio.rulesets.base import Ruleset
from lectio.rulesets.headed import fit_paragraphs
from lectio.rulesets.textsplit import break_overlong_words, paragraphs

RULES = {
    "unit": "thesis with its proof",
    "thesis_start": "a paragraph opening '<n>. '",
    "proof_start": "a paragraph opening 'Proof:'",
    "numbering": "1, 2, 3 … without gaps",
    "preface": "text before thesis 1, one chunk (split to fit)",
    "header": "[<work> | <author> | Thesis <n>]",
    "text": "<header>\n\n<thesis>\n\nProof: <proof>",
    "max_tokens": MAX_TEXT_TOKENS,
    "split": "proof paragraphs, then sentences, then clauses; header and thesis on every piece",
    "refs": "find_references over thesis and proof",
    "chunk_ids": "<source id>/preface or <source id>/thesis_<n>, then _p<piece> when split",
    "revision": 2,
}
RULESET = ruleset_version("theses", RULES)

_THESIS_START = re.compile(r"(\d{1,3})\.\s+(\S.*)", re.DOTALL)
_PROOF_START = re.compile(r"Proof\s*[:.]\s*(.*)", re.DOTALL | re.IGNORECASE)
_PROOF_LINE = re.compile(r"\n(?=[ \t]*Proof\s*[:.])", re.IGNORECASE)
# Below this many word pieces left for the proof beside header and thesis, a piece says nothing.
_MIN_PROOF_BUDGET = 48


@dataclass(frozen=True)
class Thesis:
    number: int
    statement: str
    proof: tuple[str, ...]  # paragraphs


@dataclass(frozen=True)
class Disputation:
    preface: tuple[str, ...]  # paragraphs before thesis 1
    theses: tuple[Thesis, ...]


def read(source: Source, corpus_dir: Path | None = None) -> RawText:
    text = read_text_file(source)
    return RawText(source.id, hash_parts([text]), text, units=len(paragraphs(text)))


def parse(source: Source, raw: RawText) -> Disputation:
    preface: list[str] = []
    theses: list[tuple[int, str, list[str]]] = []  # number, statement, proof paragraphs
    in_proof = False
    for paragraph in _blocks(break_overlong_words(raw.payload)):  # every size true: see break_overlong_words
        if start := _THESIS_START.fullmatch(paragraph):
            number = int(start[1])
            expected = len(theses) + 1
            if number != expected:
                raise SourceError(source.id, f"thesis {number} found where thesis {expected} was expected")
            theses.append((number, start[2], []))
            in_proof = False
        elif proof := _PROOF_START.fullmatch(paragraph):
            if not theses:
                raise SourceError(source.id, "a 'Proof:' paragraph comes before thesis 1")
            if in_proof:
                raise SourceError(source.id, f"thesis {theses[-1][0]} has two 'Proof:' paragraphs")
            theses[-1][2].append(proof[1])
            in_proof = True
        elif not theses:
            preface.append(paragraph)
        elif in_proof:
            theses[-1][2].append(paragraph)
        else:
            # Between a thesis and its proof: a statement that ran over a blank line.
            number, statement, proof_paragraphs = theses[-1]
            theses[-1] = (number, f"{statement} {paragraph}", proof_paragraphs)
    if not theses:
        raise SourceError(
            source.id,
            "has no numbered theses: a disputation is paragraphs opening '1. ', '2. ' …, each followed by 'Proof: …'",
        )
    return Disputation(tuple(preface), tuple(Thesis(n, s, tuple(p)) for n, s, p in theses))


def _blocks(text: str) -> list[str]:
    """Paragraphs, with a 'Proof:' line that follows its thesis without a blank line cut off
    as a paragraph of its own; whitespace inside a paragraph (wrapped lines) made single."""
    blocks = []
    for paragraph in paragraphs(text):
        blocks.extend(" ".join(part.split()) for part in _PROOF_LINE.split(paragraph))
    return blocks


def chunk(source: Source, disputation: Disputation) -> list[Chunk]:
    chunks: list[Chunk] = []
    if disputation.preface:
        chunks += _chunks(source, source_chunk_id(source, "preface"), "preface", "Preface", "", disputation.preface, {})
    for thesis in disputation.theses:
        chunks += _chunks(
            source,
            source_chunk_id(source, f"thesis_{thesis.number}"),
            "thesis",
            f"Thesis {thesis.number}",
            thesis.statement,
            thesis.proof,
            {"thesis_number": thesis.number, "thesis": thesis.statement},
        )
    return chunks


def _chunks(source, base_id, granularity, place, statement, body, about) -> list[Chunk]:
    """One chunk for a thesis (or the preface), or several when it is too long for the model;
    each piece repeats the header and the statement and carries part of the body."""
    work, author = source.title, source.metadata.get("author")
    header_parts = [work, *([author] if author else []), place]
    lead = f"{statement}\n\nProof: " if statement and body else statement
    widest = f"[{' | '.join(header_parts)} | Part 99 of 99]\n\n{lead}"
    budget = MAX_TEXT_TOKENS - count_tokens([widest])[0]
    if budget < _MIN_PROOF_BUDGET:
        raise SourceError(source.id, f"{place} is too long to repeat on every piece of its proof")
    pieces = fit_paragraphs(body, budget) if body else [""]
    chunks = []
    for part, piece in enumerate(pieces, start=1):
        split = len(pieces) > 1
        header = "[" + " | ".join(header_parts + ([f"Part {part} of {len(pieces)}"] if split else [])) + "]"
        content = f"{lead}{piece}"
        text = f"{header}\n\n{content}"
        tokens = count_tokens([text])[0]
        refs, ordinal, ranges = refs_of(content)
        carried = {k: v for k, v in source.metadata.items() if k in ("author", "tradition", "tier")}
        chunks.append(
            Chunk.for_source(
                source,
                RULESET,
                chunk_id=f"{base_id}_p{part}" if split else base_id,
                granularity=granularity,
                text=text,
                tokens=tokens,
                breadcrumb=f"{work} › {place}",
                refs=refs,
                ordinal=ordinal,
                title=work,
                metadata={"work": work, **about, "part": part, "parts": len(pieces), "ref_ranges": ranges, **carried},
            )
        )
    return chunks


class Theses(Ruleset[Disputation], read=read, parse=parse, chunk=chunk):
    name = "theses"
    versions = {"default": RULESET}
    granularities = frozenset({"preface", "thesis"})

    def units(self, disputation: Disputation) -> int:
        return len(disputation.theses)


THESES = Theses()
