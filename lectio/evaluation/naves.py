"""A labelled query set derived from Nave's Topical Bible. EVALUATION ONLY.

Nave's topics and their verse lists are an independent, human judgement of which verses are
about what, which is exactly why they must never feed chunk text, tags, expansion vocabulary
or ranking: a system that learnt from them would be graded on its own answers.

How the set is made (every step deterministic, so the file can be regenerated and diffed):

1. Every topic of the SWORD ``Nave`` module (a zLD dictionary); the two entries stored under
   one key (SIN, REVERENCE) are merged.
2. Its ``osisRef``s are expanded to verse ids in the KJV versification Nave's was made for:
   a range to every verse between its ends, a bare chapter ("Rom.2") to the whole chapter.
   The module's markup sometimes ends a reference early: for one-chapter books
   ("<ref osisRef="Jude.1.1">Jude 1</ref>:9") the verse after the tag is taken (Jude 9); a
   reference glued to a following word ("<ref osisRef="Amos.2">Amos 2</ref>Sa 19:13", really
   2 Sam 19:13) is wrong and is dropped. Both are counted.
3. Each verse id is kept only if the World English Bible has text there; the rest (apocrypha,
   verses the WEB's NRSVA versification lacks or leaves empty) are dropped and counted.
4. Person and place topics are skipped: they test name matching, not retrieval by meaning,
   and their verse lists are biographies and itineraries. Two tests, either suffices:
   a. the title is a name: every word of it the Bible uses is a word it only ever capitalises
      ("Aaron", "Abed-nego", "Jehovah-nissi"). Judged on the KJV first, since Nave's spells
      names as the KJV does, then on the WEB for the words the KJV lacks ("Bezalel"). So
      "Sabbath" stays (the KJV writes "sabbath"), as does "Word of God", and titles neither
      Bible uses ("Prayerfulness") are kept;
   b. Nave's opening line introduces a person or a place ("A city on the Nile River",
      "A nephew of Barnabas", "1. Son of Hezron", "A Benjamite"), which catches names that are
      also English words: No, Mark, Ram.
5. A topic is in the band when it keeps between ``band[0]`` and ``band[1]`` verses: small
   enough that recall@20 can reach 1, large enough that one lucky hit is not the whole score.
6. From the topics in the band, sorted by key, ``limit`` are taken at evenly spaced positions.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pysword.canons import canons

from lectio.bible.books import book_by_osis
from lectio.readers.corpus import ensure_sword_module
from lectio.readers.sword_bible import parse_verse, read_sword_bible
from lectio.readers.zld import read_zld

NAVE_MODULE = "Nave"
WEB_MODULE = "engWEB2015eb"
KJV_MODULE = "engKJV2006eb"

# A reference and the characters right after it: the markup sometimes cuts a reference short.
_OSIS_REF = re.compile(r'<ref osisRef="([^"]+)">[^<]*</ref>([^<\s;,.)]*)')
# "<ref osisRef="Jude.1.1">Jude 1</ref>:9" means Jude 1:9 (one-chapter books, 246 times).
_VERSE_AFTER = re.compile(r":(\d+)(?:-(\d+))?$")
# A word, hyphenated compounds kept whole: the KJV writes "Tubal-cain" and "Obed-edom", and
# their lower-case halves must not make "Cain" or "Edom" look like common words.
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LIGATURES = str.maketrans({"æ": "ae", "Æ": "Ae", "œ": "oe", "Œ": "Oe"})
# The opening line of an entry, after its first "→" marker: Nave's describes the topic there.
_OPENING = re.compile(r"<def>\s*(?:<lb/>)?\s*(?:→\s*)?([^<]*)")
_SPACE = re.compile(r"\s+")
# An opening that introduces a person or a place: "A city on the Nile River" (NO),
# "A nephew of Barnabas" (MARK), "1. Son of Hezron" (RAM), "A Benjamite".
_PLACES = (
    "city|town|village|district|province|country|river|mountain|valley|island|seaport|encampment"
)
_KIN = (
    "son|daughter|wife|husband|father|mother|grandson|grandfather|ancestor|descendants?"
    "|brother|sister|nephew|king|queen"
)
_PERSON_OR_PLACE = re.compile(
    rf"""^\(?(?:\d+\.\s*)?(?:
        (?i:(?:a|an)\s+(?:[\w-]+\s+)?(?:{_PLACES})\b)
      | (?i:(?:(?:a|an|the)\s+)?(?:{_KIN})\s+of\b)
      | (?:A|An)\s+[A-Z][a-z]+ites?\b
    )""",
    re.VERBOSE,
)
# Joining words of multi-word titles say nothing about whether the title is a name.
_FUNCTION_WORDS = frozenset("of the and in on to for a an with by from at".split())


def ensure_naves(corpus_dir: Path) -> Path:
    """The SWORD library root holding Nave's, fetched on demand."""
    return ensure_sword_module(corpus_dir, NAVE_MODULE)


@dataclass
class NaveTopic:
    key: str  # "FORGIVENESS"
    osis_refs: list[str]  # every osisRef of the entry, in entry order, repaired
    description: str  # the entry's opening words: "A city on the Nile River"
    repaired: int = 0  # one-chapter-book refs whose verse followed the markup
    garbled: int = 0  # refs glued to the next word ("Amos 2</ref>Sa 19:13"): wrong, dropped

    @property
    def describes_person_or_place(self) -> bool:
        return bool(_PERSON_OR_PLACE.match(self.description))


def _one_chapter_start(osis_ref: str) -> bool:
    book, _, rest = osis_ref.partition(".")
    try:
        return rest == "1.1" and book_by_osis(book).chapters == 1
    except KeyError:
        return False


def nave_topics(library: Path) -> dict[str, NaveTopic]:
    """Every topic by key; the two entries stored under one key are merged."""
    topics: dict[str, NaveTopic] = {}
    for key, markup in read_zld(library, NAVE_MODULE):
        opening = _OPENING.search(markup)
        description = _SPACE.sub(" ", opening[1]).strip() if opening else ""
        topic = topics.setdefault(key, NaveTopic(key, [], description))
        for osis_ref, after in _OSIS_REF.findall(markup):
            if not after:
                topic.osis_refs.append(osis_ref)
            elif (verse := _VERSE_AFTER.match(after)) and _one_chapter_start(osis_ref):
                book = osis_ref[: -len(".1.1")]
                end = f"-{book}.1.{verse[2]}" if verse[2] else ""
                topic.osis_refs.append(f"{book}.1.{verse[1]}{end}")
                topic.repaired += 1
            else:
                topic.garbled += 1
    return topics


class KjvVerses:
    """Verse ids of the 66 books in KJV versification, to expand Nave's ranges."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.position: dict[str, int] = {}
        self.chapters: dict[tuple[str, int], tuple[int, int]] = {}  # → first, last position
        for testament in ("ot", "nt"):
            for _name, osis, _abbr, verse_counts in canons["kjv"][testament]:
                book = book_by_osis(osis).id
                for chapter, count in enumerate(verse_counts, start=1):
                    first = len(self.ids)
                    for verse in range(1, count + 1):
                        self.position[f"{book}_{chapter}_{verse}"] = len(self.ids)
                        self.ids.append(f"{book}_{chapter}_{verse}")
                    self.chapters[(book, chapter)] = (first, len(self.ids) - 1)

    def expand(self, osis_ref: str) -> list[str] | None:
        """Verse ids of "Gen.1.1", "Gen.1.1-Gen.1.5" or "Gen.1"; None if not in the 66 books."""
        start, _, end = osis_ref.partition("-")
        first = self._bound(start, last=False)
        last = self._bound(end or start, last=True)
        if first is None or last is None or last < first:
            return None
        return self.ids[first : last + 1]

    def _bound(self, osis: str, last: bool) -> int | None:
        parts = osis.split(".")
        try:
            book = book_by_osis(parts[0]).id
        except KeyError:
            return None  # PrAzar and other apocrypha
        numbers = [int(p) for p in parts[1:] if p.isdigit()]
        if len(numbers) == 1:
            span = self.chapters.get((book, numbers[0]))
            return None if span is None else span[1 if last else 0]
        if len(numbers) == 2:
            return self.position.get(f"{book}_{numbers[0]}_{numbers[1]}")
        return None


@dataclass(frozen=True)
class WordCase:
    """How often a Bible writes each word (lower-cased key) in lower case and capitalised."""

    lower: Counter
    upper: Counter

    @classmethod
    def of(cls, texts: Iterable[str]) -> WordCase:
        lower: Counter = Counter()
        upper: Counter = Counter()
        for text in texts:
            for word in _WORD.findall(text.translate(_LIGATURES)):
                (lower if word.islower() else upper)[word.lower()] += 1
        return cls(lower, upper)

    def __contains__(self, word: str) -> bool:
        return bool(self.lower[word] or self.upper[word])

    def only_capitalised(self, word: str) -> bool:
        return word in self and not self.lower[word]


@dataclass(frozen=True)
class BibleFacts:
    """What the generator needs from the real Bible texts."""

    web_verses: frozenset[str]  # verse ids with WEB text
    kjv: WordCase  # Nave's spells as the KJV does, so names are judged there first
    web: WordCase  # then in the WEB, for modern spellings Nave's also uses ("Bezalel")

    def _is_proper(self, word: str) -> bool | None:
        """True or False as the first Bible that uses the word (as written or unhyphenated,
        "Abed-nego" → "abednego") writes it; None if neither does."""
        for case in (self.kjv, self.web):
            for form in (word, word.replace("-", "")):
                if form in case:
                    return case.only_capitalised(form)
        return None

    def is_name(self, title: str) -> bool:
        # Judge the heading itself; a parenthesis holds a variant spelling or a gloss
        # ("BARTIMEUS (BARTIMAEUS)", "TRIBUTE (TAXES)"), consulted only if the heading is unknown.
        heading, _, variant = title.partition("(")
        for part in (heading, variant):
            text = re.sub(r"'S\b", "", part).translate(_LIGATURES)
            words = [w.lower() for w in _WORD.findall(text)]
            content = [w for w in words if w not in _FUNCTION_WORDS] or words
            judged = [p for w in content if (p := self._is_proper(w)) is not None]
            if judged:
                return all(judged)
        return False

    def natural_case(self, title: str) -> str:
        """ "WORD OF GOD" → "Word of God": sentence case, with the words the KJV mostly
        capitalises ("God", "Lord") capitalised."""
        pieces = _WORD.split(title)
        out = [pieces[0]]
        for word, after in zip(_WORD.findall(title), pieces[1:]):
            key = word.lower()
            mostly_upper = self.kjv.upper[key] > self.kjv.lower[key]
            out.append(word.capitalize() if mostly_upper else key)
            out.append(after.lower())
        text = "".join(out)
        return text[:1].upper() + text[1:]


def verse_texts(library: Path, module: str) -> Iterator[tuple[str, str]]:
    for verse in read_sword_bible(library, module):
        yield f"{book_by_osis(verse.book_osis).id}_{verse.chapter}_{verse.verse}", parse_verse(
            verse.markup
        ).text


def bible_facts(corpus_dir: Path) -> BibleFacts:
    web = dict(verse_texts(ensure_sword_module(corpus_dir, WEB_MODULE), WEB_MODULE))
    kjv = verse_texts(ensure_sword_module(corpus_dir, KJV_MODULE), KJV_MODULE)
    return BibleFacts(
        web_verses=frozenset(v for v, text in web.items() if text),
        kjv=WordCase.of(text for _, text in kjv),
        web=WordCase.of(web.values()),
    )


@dataclass(frozen=True)
class TopicVerses:
    topic: NaveTopic
    verses: tuple[str, ...]  # WEB verse ids, canonical order, no repeats
    dropped: int  # expanded verse ids, or refs outside the 66 books, that the WEB lacks


def topic_verses(topic: NaveTopic, kjv: KjvVerses, web_verses: frozenset[str]) -> TopicVerses:
    kept: dict[str, None] = {}
    dropped: set[str] = set()
    for osis_ref in topic.osis_refs:
        expanded = kjv.expand(osis_ref)
        if expanded is None:
            dropped.add(osis_ref)
            continue
        for verse in expanded:
            if verse in web_verses:
                kept[verse] = None
            else:
                dropped.add(verse)
    verses = tuple(sorted(kept, key=kjv.position.__getitem__))
    return TopicVerses(topic, verses, len(dropped))


@dataclass(frozen=True)
class NavesReport:
    topics: int  # distinct topic keys in the module
    names_skipped: int  # person and place topics
    in_band: int  # other topics whose verse count is in the band
    sampled: int
    refs_repaired: int  # over all topics: one-chapter-book refs completed from the text
    refs_garbled: int  # over all topics: refs glued to the next word, dropped
    dropped_all: int  # verse ids not in the WEB, over all topics
    dropped_sampled: int  # the same, in the sampled topics
    garbled_sampled: int


def build_naves_queries(
    corpus_dir: Path, band: tuple[int, int] = (5, 40), limit: int = 200
) -> tuple[list[dict], NavesReport]:
    """The query records (``{"id", "query", "relevant"}``, in topic-key order) and what was skipped."""
    topics = nave_topics(ensure_naves(corpus_dir))
    facts = bible_facts(corpus_dir)
    kjv = KjvVerses()
    low, high = band
    names = 0
    every: list[TopicVerses] = []
    eligible: list[TopicVerses] = []
    for key in sorted(topics):
        found = topic_verses(topics[key], kjv, facts.web_verses)
        every.append(found)
        if facts.is_name(key) or topics[key].describes_person_or_place:
            names += 1
        elif low <= len(found.verses) <= high:
            eligible.append(found)
    chosen = _evenly_spaced(eligible, limit)
    records = [
        {
            "id": "nave-" + re.sub(r"[^a-z0-9]+", "-", t.topic.key.lower()).strip("-"),
            "query": facts.natural_case(t.topic.key),
            "relevant": list(t.verses),
        }
        for t in chosen
    ]
    report = NavesReport(
        topics=len(topics),
        names_skipped=names,
        in_band=len(eligible),
        sampled=len(chosen),
        refs_repaired=sum(t.repaired for t in topics.values()),
        refs_garbled=sum(t.garbled for t in topics.values()),
        dropped_all=sum(t.dropped for t in every),
        dropped_sampled=sum(t.dropped for t in chosen),
        garbled_sampled=sum(t.topic.garbled for t in chosen),
    )
    return records, report


def _evenly_spaced(items: list, count: int) -> list:
    if len(items) <= count:
        return list(items)
    return [items[(i * len(items)) // count] for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    from lectio.settings import load_settings

    parser = argparse.ArgumentParser(
        prog="python -m lectio.evaluation.naves",
        description="Write the Nave's-derived evaluation query set (JSONL).",
    )
    parser.add_argument("out", type=Path, help="output JSONL file")
    parser.add_argument("--min", type=int, default=5, help="fewest WEB verses a topic may have")
    parser.add_argument("--max", type=int, default=40, help="most WEB verses a topic may have")
    parser.add_argument("--limit", type=int, default=200, help="topics to sample")
    parser.add_argument("--corpus-dir", type=Path, help="default: the settings' corpus folder")
    args = parser.parse_args(argv)
    corpus_dir = args.corpus_dir or load_settings().corpus_dir
    records, report = build_naves_queries(corpus_dir, (args.min, args.max), args.limit)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(
        f"{report.topics} topics, {report.names_skipped} skipped as persons or places, "
        f"{report.in_band} in band {args.min}-{args.max} verses, {report.sampled} sampled "
        f"→ {args.out}\n"
        f"refs repaired (one-chapter books): {report.refs_repaired}; refs garbled and dropped: "
        f"{report.refs_garbled} ({report.garbled_sampled} in the sample); verse ids the WEB "
        f"lacks, dropped: {report.dropped_all} ({report.dropped_sampled} in the sample)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
