"""A labelled query set of long queries: a 30-60 word passage of commentary, asking for the
scripture it is about, as a study tool sends a doctrinal statement or a sermon point. EVALUATION
ONLY.

The relevance judgement is the commentator's, made independently of lectio: Matthew Henry's
Concise Commentary files each comment under the verses it expounds ("Verses 14-19"), so a passage
cut from a comment is about those verses.

How the set is made (every step deterministic given the seed, so anyone can regenerate and diff it):

1. Every unit of the SWORD ``mhcc`` module, read and segmented by the same reader and segmenter
   the index uses (lectio.rulesets.commentary), so a unit's verses are the ones its chunk is
   filed under. Only units on a run of verses are kept: a chapter's summary or a book's
   introduction is about too much to grade a ranking by.
2. A unit is eligible when it comments on between ``band[0]`` and ``band[1]`` verses: at most
   what recall@20 can reach with single verses.
3. Its passage: the first run of whole, consecutive sentences of one paragraph that holds between
   ``MIN_WORDS`` and ``MAX_WORDS`` words. A sentence holding a digit (a reference: "ver. 18",
   "Is 11:15") is never part of one, nor is a run bridged over it: a reference would turn the
   query into a look-up, which is not the question asked here.
4. Relevant: the unit's verses and any the passage's paragraph cites by osisRef, each kept only
   where the World English Bible has text (the module's KJV versification numbers a few verses
   the WEB leaves empty).
5. ``limit`` eligible units are drawn with ``random.Random(seed)`` and written in canon order,
   each with ``"filters": {"kind": "scripture"}``.

Traps, and why the set is shaped this way:

* lectio indexes this commentary, so the passage is also a chunk of the index, word for word, and
  that chunk covers the relevant verses: unfiltered, a search would be credited for finding the
  commentary itself. Every record asks ``kind: scripture``, which keeps the chunk off the page,
  but a hybrid search narrowed to scripture lets the commentary it finds speak for the verses it
  is filed under (lectio.retrieval.config.EvidenceSettings), so on an index holding ``mhcc`` the
  passage would name its own answer. Score lectio's hybrid on an index built without the ``mhcc``
  source (docs/query-shapes.md); the plain modes and the baselines read no other kind.
* Scofield's notes are not used: the verses they cite are what the citation prior
  (``fusion.prominence_weight``) counts, so labels drawn from them would reward the prior for agreeing
  with itself. Henry's comments cite almost nothing, and his ranges are one verse's neighbours,
  not a prior's favourites.
* A passage may dwell on one verse of a ten-verse range; recall counts the whole range all the
  same. The noise is the same for every system compared on the set.

The dev and test parts follow from each query's id, as for every set (querysets.part_of).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lectio.bible.refs import Ref
from lectio.evaluation.naves import WEB_MODULE, verse_texts
from lectio.readers.corpus import ensure_sword_module
from lectio.readers.sword_commentary import osis_ref_ids
from lectio.rulesets import commentary
from lectio.rulesets.commentary_units import Unit
from lectio.rulesets.textsplit import sentences
from lectio.sources import Source

MODULE = "mhcc"
MIN_WORDS, MAX_WORDS = 30, 60
BAND = (1, 20)
LIMIT = 1000
SEED = 20261205
FILTERS = {"kind": "scripture"}
# Henry's references take many forms ("ver. 18", "Is 11:15", "Is. 66:19,20", a stray "30." the
# sentencizer cut from "ver."): every one holds a digit, and his prose rarely holds one otherwise.
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Passage:
    unit: Unit
    text: str
    paragraph: int  # which of the unit's paragraphs it was cut from


def passage(paragraph: str, min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> str | None:
    """The first run of whole consecutive sentences of `paragraph` holding min_words to max_words
    words, none naming a reference; None where there is none."""
    runs: list[list[str]] = [[]]
    for sentence in sentences(paragraph):
        if _names_reference(sentence):
            runs.append([])  # a run never bridges a sentence left out
        else:
            runs[-1].append(sentence)
    for run in runs:
        for start in range(len(run)):
            words, end = 0, start
            while end < len(run) and words < min_words:
                words += len(run[end].split())
                end += 1
            if min_words <= words <= max_words:
                return " ".join(run[start:end])
    return None


def _names_reference(sentence: str) -> bool:
    return bool(_DIGIT.search(sentence))


def passages(units: Iterable[Unit]) -> Iterator[Passage]:
    """The passage of each unit that has one, in the units' order."""
    for unit in units:
        for number, paragraph in enumerate(unit.paragraphs):
            if (text := passage(paragraph)) is not None:
                yield Passage(unit, text, number)
                break


def relevant_verses(found: Passage, lengths: dict[str, tuple[int, ...]], web_verses: frozenset[str]) -> list[str]:
    """The unit's verses and those its paragraph cites, canon order, only where the WEB has text."""
    cited = found.unit.paragraph_refs[found.paragraph] if found.unit.paragraph_refs else ()
    refs = set(commentary.unit_refs(found.unit, lengths))
    for osis_ref in cited:
        refs.update(osis_ref_ids(osis_ref, lengths)[0])
    return sorted((r for r in refs if r in web_verses), key=lambda r: Ref.from_id(r).ordinal)


def query_id(unit: Unit) -> str:
    span = f"{unit.verses[0]}" if len(unit.verses) == 1 else f"{unit.verses[0]}_{unit.verses[-1]}"
    return f"long-{MODULE}-{unit.book}_{unit.chapter}_{span}"


def build_long_queries(units: list[Unit], lengths: dict[str, tuple[int, ...]], web_verses: frozenset[str],
                       band: tuple[int, int] = BAND, limit: int = LIMIT, seed: int = SEED) -> list[dict]:
    """The query records (``{"id", "query", "relevant", "filters"}``) in the units' order."""
    low, high = band
    eligible, seen = [], set()
    for found in passages(u for u in units if u.scope == "verses" and low <= len(u.verses) <= high):
        record_id = query_id(found.unit)
        relevant = relevant_verses(found, lengths, web_verses)
        if relevant and record_id not in seen:  # a segmenter may cut one range twice: the first stays
            seen.add(record_id)
            eligible.append({"id": record_id, "query": found.text, "relevant": relevant, "filters": dict(FILTERS)})
    if len(eligible) <= limit:
        return eligible
    chosen = sorted(random.Random(seed).sample(range(len(eligible)), limit))
    return [eligible[i] for i in chosen]


def read_units(corpus_dir: Path) -> tuple[list[Unit], dict[str, tuple[int, ...]]]:
    """The commentary's units and its versification, read as the index reads the source."""
    source = Source(id=MODULE, kind="commentary", format="sword-commentary", acl=("public",), module=MODULE,
                    metadata={"title": "Concise Commentary", "author": "Matthew Henry"})
    parsed = commentary.parse(source, commentary.read(source, corpus_dir))
    return parsed.units, parsed.chapter_lengths


def web_verses(corpus_dir: Path) -> frozenset[str]:
    library = ensure_sword_module(corpus_dir, WEB_MODULE)
    return frozenset(verse for verse, text in verse_texts(library, WEB_MODULE) if text)


def main(argv: list[str] | None = None) -> int:
    from lectio.settings import load_settings

    parser = argparse.ArgumentParser(prog="python -m lectio.evaluation.long_queries",
                                     description="Write the long-passage evaluation query set (JSONL).")
    parser.add_argument("--out", type=Path, required=True, help="output JSONL file")
    parser.add_argument("--limit", type=int, default=LIMIT, help="passages to draw")
    parser.add_argument("--seed", type=int, default=SEED, help="the draw's seed")
    parser.add_argument("--min", type=int, default=BAND[0], help="fewest verses a comment may be about")
    parser.add_argument("--max", type=int, default=BAND[1], help="most verses a comment may be about")
    parser.add_argument("--corpus-dir", type=Path, help="default: the settings' corpus folder")
    args = parser.parse_args(argv)
    if not 1 <= args.min <= args.max:
        parser.error(f"--min {args.min} and --max {args.max}: need 1 <= min <= max")
    corpus_dir = args.corpus_dir or load_settings().corpus_dir
    units, lengths = read_units(corpus_dir)
    records = build_long_queries(units, lengths, web_verses(corpus_dir), (args.min, args.max), args.limit, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(records)} passages of {MIN_WORDS}-{MAX_WORDS} words from {MODULE} (seed {args.seed}, "
          f"comments on {args.min}-{args.max} verses) → {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
