"""A labelled query set of near-quotations: a well-known kind of question for a Bible app, where a
reader quotes a verse whole, or half-remembers it, and expects that verse first. EVALUATION ONLY.

How the set is made (every step deterministic given the seed, so anyone can regenerate and diff it):

1. Every verse of the World English Bible and the KJV is read from the SWORD modules.
2. A verse is eligible when both translations have text there and its WEB text has between
   ``MIN_WORDS`` and ``MAX_WORDS`` words: shorter ones ("Jesus wept.") are one phrase anyone
   finds, longer ones are paragraphs nobody quotes whole.
3. ``limit`` eligible verses are drawn from the whole canon with ``random.Random(seed)``; for
   each, one translation and one way of quoting are drawn with the same generator:
   - ``whole``: the verse as that translation has it;
   - ``first-half`` / ``last-half``: its first or last half of words, as a reader who
     remembers only the opening or the close;
   - ``dropped``: every word dropped with probability ``DROP_SHARE`` (at least ``MIN_WORDS``
     kept), as a reader who remembers it loosely;
   - ``mixed``: the first half in one translation and the rest in the other, as a reader whose
     memory mixes renderings.
4. Relevant: the quoted verse and its parallels, the verses whose WEB words are nearly the same
   (Jaccard similarity of their word sets at least ``PARALLEL_JACCARD``: Psalm 14 and 53, Kings
   and Chronicles, the synoptic gospels' shared sayings).

The dev and test parts follow from each query's id, as for every set (querysets.part_of).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from lectio.evaluation.naves import KJV_MODULE, WEB_MODULE, verse_texts
from lectio.readers.corpus import ensure_sword_module

MIN_WORDS, MAX_WORDS = 8, 45
DROP_SHARE = 0.2
PARALLEL_JACCARD = 0.7
WAYS = ("whole", "first-half", "last-half", "dropped", "mixed")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


@dataclass(frozen=True)
class Verse:
    id: str
    web: str
    kjv: str

    def words(self, translation: str) -> list[str]:
        return _WORD.findall(self.web if translation == "WEB" else self.kjv)


def quote(verse: Verse, way: str, translation: str, rng: random.Random) -> str:
    """The query a reader types for `verse`, quoted one `way` from `translation`."""
    words = verse.words(translation)
    half = len(words) // 2
    if way == "whole":
        return verse.web if translation == "WEB" else verse.kjv
    if way == "first-half":
        return " ".join(words[: max(half, MIN_WORDS // 2)])
    if way == "last-half":
        return " ".join(words[-max(half, MIN_WORDS // 2):])
    if way == "dropped":
        kept = [w for w in words if rng.random() >= DROP_SHARE]
        return " ".join(kept if len(kept) >= MIN_WORDS else words[:MIN_WORDS])
    if way == "mixed":
        other = verse.words("KJV" if translation == "WEB" else "WEB")
        return " ".join(words[:half] + other[len(other) // 2:])
    raise ValueError(f"unknown way of quoting {way!r}")


def parallels(verse_id: str, word_sets: dict[str, frozenset[str]], by_word: dict[str, list[str]]) -> list[str]:
    """Other verses whose WEB words are nearly this one's, found through the words they share."""
    own = word_sets[verse_id]
    shared = defaultdict(int)
    for word in own:
        for other in by_word[word]:
            shared[other] += 1
    return sorted(other for other, common in shared.items()
                  if other != verse_id and common / len(own | word_sets[other]) >= PARALLEL_JACCARD)


def build_quotation_queries(web: dict[str, str], kjv: dict[str, str], limit: int, seed: int) -> list[dict]:
    eligible = [Verse(vid, text, kjv[vid]) for vid, text in web.items()
                if kjv.get(vid) and MIN_WORDS <= len(_WORD.findall(text)) <= MAX_WORDS]
    word_sets = {vid: frozenset(w.lower() for w in _WORD.findall(text)) for vid, text in web.items() if text}
    by_word: dict[str, list[str]] = defaultdict(list)
    for vid, words in word_sets.items():
        for word in words:
            by_word[word].append(vid)
    rng = random.Random(seed)
    records = []
    for verse in rng.sample(eligible, limit):
        way, translation = rng.choice(WAYS), rng.choice(("WEB", "KJV"))
        records.append({
            "id": f"quote-{verse.id}-{way}-{translation.lower()}",
            "query": quote(verse, way, translation, rng),
            "relevant": [verse.id, *parallels(verse.id, word_sets, by_word)],
        })
    return records


def main(argv: list[str] | None = None) -> int:
    from lectio.settings import load_settings

    parser = argparse.ArgumentParser(prog="python -m lectio.evaluation.quotations",
                                     description="Write the near-quotation evaluation query set (JSONL).")
    parser.add_argument("out", type=Path, help="output JSONL file")
    parser.add_argument("--limit", type=int, default=200, help="verses to quote")
    parser.add_argument("--seed", type=int, default=20261202, help="the draw's seed")
    parser.add_argument("--corpus-dir", type=Path, help="default: the settings' corpus folder")
    args = parser.parse_args(argv)
    corpus_dir = args.corpus_dir or load_settings().corpus_dir
    web = dict(verse_texts(ensure_sword_module(corpus_dir, WEB_MODULE), WEB_MODULE))
    kjv = dict(verse_texts(ensure_sword_module(corpus_dir, KJV_MODULE), KJV_MODULE))
    records = build_quotation_queries(web, kjv, args.limit, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    with_parallels = sum(len(r["relevant"]) > 1 for r in records)
    print(f"{len(records)} quotations (seed {args.seed}), {with_parallels} with parallels → {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
