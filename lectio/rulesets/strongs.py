"""Strong's Greek and Hebrew dictionaries (SWORD zLD modules) as a lexicon source.

A question about a word ("agape", "G26", "the Hebrew word for mercy")
wants the lexicon entry that explains the word's range, and the verses that use it. One chunk per
entry: the number, the word in its own script, its transliteration and pronunciation, the
definition and the KJV's renderings. The WEB tags its words with Strong's numbers, so the verses
come from the scripture chunks' metadata (lectio.retrieval.door).
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from lectio.rulesets.chunk import Chunk, ruleset_version
from lectio.readers.corpus import CorpusError, ensure_sword_module
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.readers.raw import RawText, hash_parts
from lectio.readers.zld import ZldError, read_zld
from lectio.rulesets.base import Ruleset
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import split_to_fit

RULES = {
    "unit": "one dictionary entry; an entry over the model window keeps its head line on every piece",
    "text": "number, lemma, transliteration, pronunciation, then the definition and KJV renderings",
    "revision": 1,
}
RULESET = ruleset_version("lexicon", RULES)

# Which testament's language a module covers, by its key prefix in Strong's numbering.
_PREFIX = {"strongsgreek": "G", "strongshebrew": "H"}
_LANGUAGE = {"G": "Greek", "H": "Hebrew"}


@dataclass(frozen=True)
class Entry:
    number: str  # "G26", "H2617": the form the WEB's tags use (no leading zeros)
    lemma: str  # the word in Greek or Hebrew script
    transliteration: str
    pronunciation: str
    definition: str  # plain text: the derivation, the meanings, "--" and the KJV renderings

    @property
    def language(self) -> str:
        return _LANGUAGE[self.number[0]]


def read(source: Source, corpus_dir: Path) -> RawText:
    module = (source.module or "").lower()
    if module not in _PREFIX:
        raise SourceError(source.id, f"format 'sword-lexicon' reads {' and '.join(_PREFIX)}, not {source.module!r}")
    try:
        library = source.path if source.path is not None else ensure_sword_module(corpus_dir, module)
        entries = list(read_zld(library, module))
    except (CorpusError, ZldError, OSError) as exc:
        raise SourceError(source.id, f"cannot read SWORD dictionary {module!r}: {exc}") from None
    if source.select:
        wanted = _selected_numbers(source, _PREFIX[module])
        entries = [(key, text) for key, text in entries if key.isdigit() and int(key) in wanted]
    if not entries:
        where = f" in 'select' ({source.select})" if source.select else ""
        raise SourceError(source.id, f"SWORD dictionary {module!r} has no entries{where}")
    return RawText(source.id, hash_parts(f"{k}\t{v}" for k, v in entries), (_PREFIX[module], entries), len(entries))


def _selected_numbers(source: Source, prefix: str) -> set[int]:
    """`select: "G25-G27; G5485"`: the entries to read (tests and samples need a few, not all)."""
    wanted: set[int] = set()
    for part in re.split(r"[;,]", source.select or ""):
        match = re.fullmatch(rf"\s*{prefix}(\d+)(?:\s*-\s*{prefix}?(\d+))?\s*", part, re.IGNORECASE)
        if match is None:
            raise SourceError(source.id, f"select {part.strip()!r} is not a {prefix}-number or range such as {prefix}25-{prefix}27")
        first = int(match[1])
        wanted.update(range(first, int(match[2] or first) + 1))
    return wanted


_TAG = re.compile(r"<[^>]+>")


def _field(markup: str, pattern: str) -> str:
    match = re.search(pattern, markup, re.S)
    return _plain(match[1]) if match else ""


def _plain(markup: str) -> str:
    text = html.unescape(_TAG.sub(" ", markup))
    return re.sub(r"\s+", " ", text).strip()


def parse(source: Source, raw: RawText) -> list[Entry]:
    prefix, pairs = raw.payload
    entries = []
    seen: set[int] = set()
    for key, markup in pairs:
        if not key.isdigit():
            continue  # the modules' front matter and alias keys
        if int(key) in seen:
            continue  # StrongsHebrew stores H2200 twice, identically; one entry per number
        seen.add(int(key))
        lemma = _field(markup, r"<orth>(.*?)</orth>")
        definition = _plain(re.sub(r"<orth[^>]*>.*?</orth>|<pron[^>]*>.*?</pron>", " ", markup, count=4, flags=re.S))
        if not lemma and not definition:
            continue
        entries.append(
            Entry(
                number=f"{prefix}{int(key)}",
                lemma=lemma,
                transliteration=_field(markup, r'<orth[^>]*type="trans"[^>]*>(.*?)</orth>'),
                pronunciation=_field(markup, r"<pron[^>]*>(.*?)</pron>"),
                definition=definition,
            )
        )
    if not entries:
        raise SourceError(source.id, "the dictionary has no numbered entries")
    return entries


def plain_letters(word: str) -> str:
    """A word without accents, breathings or vowel points, lower case: "agápē" → "agape",
    "ἀγάπη" → "αγαπη", so what people type matches however they mark it."""
    decomposed = unicodedata.normalize("NFKD", word)
    words = ("".join(c for c in w if c.isalpha() and not unicodedata.combining(c)) for w in decomposed.split())
    return " ".join(w for w in words if w).lower()


def chunk(source: Source, entries: list[Entry]) -> list[Chunk]:
    chunks = []
    heads = [f"{e.number} {e.lemma} ({e.transliteration}, {e.pronunciation})" for e in entries]
    for entry, head, tokens in zip(entries, heads, count_tokens([f"{h}: {e.definition}" for h, e in zip(heads, entries)])):
        bodies = [entry.definition]
        if tokens > MAX_TEXT_TOKENS:
            budget = MAX_TEXT_TOKENS - count_tokens([head + ": "])[0]
            bodies = split_to_fit(entry.definition, budget)
        texts = [f"{head}: {body}" for body in bodies]
        for part, (text, size) in enumerate(zip(texts, count_tokens(texts)), start=1):
            suffix = "" if len(texts) == 1 else f"_{part}"
            chunks.append(
                Chunk.for_source(
                    source,
                    RULESET,
                    chunk_id=f"strongs_{entry.number.lower()}{suffix}",
                    granularity="lexicon-entry",
                    text=text,
                    tokens=size,
                    header=f"Strong's {entry.language} {entry.number} | {source.metadata.get('title') or source.id}",
                    title=entry.number,
                    metadata={
                        "strongs": entry.number,
                        "language": entry.language,
                        "lemma": entry.lemma,
                        "lemma_plain": plain_letters(entry.lemma),
                        "transliteration": entry.transliteration,
                        "plain": plain_letters(entry.transliteration),
                        "pronunciation": entry.pronunciation,
                    },
                )
            )
    return chunks


class Lexicon(Ruleset[list[Entry]], read=read, parse=parse, chunk=chunk):
    name = "lexicon"
    versions = {"default": RULESET}
    granularities = frozenset({"lexicon-entry"})


LEXICON = Lexicon()
