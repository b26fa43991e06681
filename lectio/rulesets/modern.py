"""Modern scholarship: a commentary split at its passages, then at shifts of register, for
technical precision.

A modern commentary section moves between Greek or Hebrew analysis, Second Temple background,
theological exposition and application. One vector for all four answers each kind of question
half well, so the section is cut where the register changes:

1. Passages. A markdown heading, or in plain text a paragraph of one line, that the reference
   parser reads as a reference starts a passage: "## Romans 3:21-26", optionally titled
   ("## Romans 3:21-26: The Righteousness of God", "— title"). Each passage's commentary is a
   chunk family whose `refs` are that passage's verse ids. Text before the first passage is an
   "Introduction" with no refs. Other headings inside a passage name a section of it: chunks do
   not cross them. A first level-1 heading before everything is the work's title.
2. Registers, per sentence: `grammar` (Greek or Hebrew script, or grammatical and text-critical
   terms), `background` (Second Temple sources), `application` (the church today, believers,
   we/our: authorial "as we have seen" does not count), else `exposition`. When a sentence
   shows several, the first in that order wins: script is the surest signal and application
   language the loosest. A short unmarked run inside a paragraph whose other sentences are of
   one register belongs to their discussion and takes it (see `_smooth`).
3. Consecutive sentences of one register form a group. A group under MIN_GROUP_TOKENS is merged
   into a neighbour (one sharing its paragraph first, then one it fits with, then the smaller),
   taking the register of the larger share; neighbours left in one register rejoin if they fit.
4. A group over the model's limit is cut between paragraphs, then evenly between sentences.

Every chunk's text opens with `[author, work | passage | register]`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lectio.rulesets.chunk import Chunk, ruleset_version, source_chunk_id
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.bible.verses import cited_verse_ids, verse_ids
from lectio.bible.refs import Ref, RefRange, UnknownReference, parse_reference
from lectio.sources import Source, SourceError
from lectio.rulesets.headed import HeadedProse, Outline, fit_paragraphs
from lectio.rulesets.textsplit import sentences

REGISTERS = ("grammar", "background", "application", "exposition")  # priority order

# Why 40: the header alone costs ~20-30 word pieces, and a body under 40 is one average sentence
# of this prose (~30 pieces): a chunk that small has too little signal to be retrieved on its
# own (trivially short units are better merged), while 40 is well under the ~160 pieces of the four
# 125-word topical chunks a common guideline holds up as the target, so real shifts still split.
MIN_GROUP_TOKENS = 40

RULES = {
    "passages": "heading / one-line paragraph read by parse_reference, optional ': title'",
    "registers": list(REGISTERS),
    "script": "Greek U+0370-03FF, U+1F00-1FFF; Hebrew U+0590-05FF → grammar",
    "grammar_terms": [
        "genitive", "genitives", "dative", "accusative", "nominative", "vocative", "aorist",
        "aorists", "participle", "participles", "infinitive", "subjunctive", "optative",
        "imperfect tense", "perfect tense", "middle voice", "passive voice", "syntax",
        "syntactic", "grammatical", "lexical", "lexicon", "morphology", "textual tradition",
        "textual variant", "variant reading", "manuscript", "manuscripts", "Septuagint", "LXX",
        "Masoretic",
    ],
    "background_terms": [
        "Qumran", "Dead Sea Scrolls", "Essene", "Essenes", "Community Rule", "Damascus Document",
        "War Scroll", "Hodayot", "Thanksgiving Hymns", "Temple Scroll", "pesher", "pesharim",
        "Philo", "Josephus", "Antiquities", "Jewish War", "Mishnah", "Tosefta", "Talmud",
        "Targum", "Targums", "Midrash", "rabbinic", "1 Enoch", "2 Enoch", "2 Baruch", "4 Ezra",
        "Jubilees", "Sirach", "Ben Sira", "Ecclesiasticus", "Wisdom of Solomon",
        "Psalms of Solomon", "Testament of", "Testaments of", "Maccabees", "Maccabean", "Tobit",
        "Letter of Aristeas", "Pseudo-Philo", "Joseph and Aseneth", "Sibylline Oracles",
        "Second Temple", "intertestamental",
    ],
    "background_sigla": r"\d{1,2}Q[A-Za-z]\w*",  # 1QS, 4QMMT, 11QMelch
    "application_terms": [
        "today", "believer", "believers", "the church", "churches", "congregation",
        "congregations", "pastor", "pastors", "pastoral", "preach", "preaching", "preacher",
        "preachers", "sermon", "we", "us", "our", "ourselves", "modern readers",
        "contemporary",
    ],
    "authorial_not_application": [
        r"(?:as\s+)?we\s+(?:have\s+)?(?:seen|noted|saw|observed)",
        r"as\s+we\s+(?:shall|will)\s+see",
        r"we\s+(?:may|must|should|can)\s+(?:note|observe|notice)",
        r"(?:let\s+us|we)\s+(?:now\s+)?turn",
        r"our\s+(?:passage|text|verses?|author|discussion|section|commentary|analysis|reading|purposes)",
        r"(?:scholars|interpreters|commentators|exegetes)\s+today",
        r"church(?:es)?\s+(?:at|in|of)\s+(?-i:[A-Z])\w+",
    ],
    "smoothing": "unmarked run < min_group_tokens inside a paragraph takes its one marked neighbour register",
    "min_group_tokens": MIN_GROUP_TOKENS,
    "max_tokens": MAX_TEXT_TOKENS,  # header included
    "header": "[author, work | passage | register]",
    "overlap": "none: an overlapping sentence would carry its register into the next chunk",
    "chunk_ids": "<source id>/<passage>_<piece>",
    "revision": 2,
}
RULESET = ruleset_version("modern", RULES)


def _terms(terms: list[str]) -> str:
    return "|".join(r"\s+".join(map(re.escape, t.split())) for t in sorted(terms, key=len, reverse=True))


_SCRIPT = re.compile("[\u0370-\u03ff\u1f00-\u1fff\u0590-\u05ff]")
_GRAMMAR = re.compile(rf"(?<!\w)(?:{_terms(RULES['grammar_terms'])})(?!\w)", re.IGNORECASE)
_BACKGROUND = re.compile(
    rf"(?<!\w)(?:{_terms(RULES['background_terms'])}|{RULES['background_sigla']})(?!\w)", re.IGNORECASE
)
_APPLICATION = re.compile(rf"(?<!\w)(?:{_terms(RULES['application_terms'])})(?!\w)", re.IGNORECASE)
_AUTHORIAL = re.compile(r"(?<!\w)(?:" + "|".join(RULES["authorial_not_application"]) + r")(?!\w)", re.IGNORECASE)


def register_of(sentence: str) -> str:
    """The register one sentence is written in (see the module notes for the order)."""
    if _SCRIPT.search(sentence) or _GRAMMAR.search(sentence):
        return "grammar"
    if _BACKGROUND.search(sentence):
        return "background"
    if _APPLICATION.search(_AUTHORIAL.sub(" ", sentence)):
        return "application"
    return "exposition"


# ---------------------------------------------------------------- parsed structure


@dataclass(frozen=True)
class Paragraph:
    section: str | None  # a non-passage heading inside the passage
    text: str


@dataclass(frozen=True)
class Passage:
    label: str  # "Romans 3:21-26", from the parsed reference, or "Introduction"
    title: str | None
    refs: tuple[str, ...]
    key: str  # its part of chunk ids: "rom_3_21_26"
    paragraphs: tuple[Paragraph, ...]


@dataclass(frozen=True)
class Commentary:
    author: str
    title: str
    passages: tuple[Passage, ...]


_TITLE_AFTER_REFERENCE = re.compile(r"\s+[\u2013\u2014-]\s+|:\s+|\.\s+")


def _passage_heading(source: Source, text: str) -> tuple[list[RefRange], str | None] | None:
    """(ranges, title) when `text` is a reference, alone or followed by a title; else None."""
    candidates = [(text, None)] + [(text[: m.start()], text[m.end() :]) for m in _TITLE_AFTER_REFERENCE.finditer(text)]
    for reference, title in candidates:
        try:
            ranges = parse_reference(reference)
        except UnknownReference as exc:
            raise SourceError(source.id, f"passage heading {text!r} names no real passage: {exc}") from None
        if ranges:
            return ranges, (title.strip() or None) if title else None
    return None


def _key(refs: tuple[str, ...]) -> str:
    first, last = Ref.from_id(refs[0]), Ref.from_id(refs[-1])
    if first == last:
        return first.id
    if first.book != last.book:
        return f"{first.id}_{last.id}"
    end = f"{last.verse}" if last.chapter == first.chapter else f"{last.chapter}_{last.verse}"
    return f"{first.id}_{end}"


class _Passages(Outline[Passage]):
    """A passage heading closes the passage open and opens the next; any other heading names a
    section of the passage open."""

    def __init__(self, source: Source):
        super().__init__(source)
        self.current = {"label": "Introduction", "title": None, "refs": (), "key": "intro"}
        self.section: str | None = None

    def opens(self, heading: str, level: int) -> tuple[list[RefRange], str | None] | None:
        return _passage_heading(self.source, heading)

    def open(self, found: tuple[list[RefRange], str | None], heading: str) -> None:
        self.close()
        ranges, title = found
        refs = verse_ids(ranges)
        if not refs:
            raise SourceError(self.source.id, f"passage heading {heading!r} covers no verse")
        self.current.update(label="; ".join(r.label for r in ranges), title=title, refs=refs, key=_key(refs))
        self.section = None

    def heading(self, heading: str) -> None:
        self.section = heading

    def paragraph(self, text: str) -> None:
        super().paragraph(Paragraph(self.section, text))

    def division(self, paragraphs: tuple[Paragraph, ...]) -> Passage:
        return Passage(paragraphs=paragraphs, **self.current)


# ---------------------------------------------------------------- register groups


@dataclass
class Sentence:
    paragraph: int  # index within the passage, so groups can be rejoined paragraph by paragraph
    section: str | None
    text: str
    register: str
    tokens: int


@dataclass
class Group:
    sentences: list[Sentence] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.sentences)

    @property
    def section(self) -> str | None:
        return self.sentences[0].section

    @property
    def register(self) -> str:
        """The register holding most of the group's tokens (ties: the more specific)."""
        weight = {r: sum(s.tokens for s in self.sentences if s.register == r) for r in REGISTERS}
        return max(REGISTERS, key=lambda r: (weight[r], -REGISTERS.index(r)))

    @property
    def registers(self) -> list[str]:
        return sorted({s.register for s in self.sentences})

    def paragraph_texts(self) -> list[str]:
        texts: list[list[str]] = []
        last = None
        for s in self.sentences:
            if s.paragraph != last:
                texts.append([])
                last = s.paragraph
            texts[-1].append(s.text)
        return [" ".join(t) for t in texts]


def classify(passage: Passage) -> list[Sentence]:
    found = [
        (index, paragraph.section, sentence)
        for index, paragraph in enumerate(passage.paragraphs)
        for sentence in sentences(paragraph.text)
    ]
    sizes = count_tokens([text for _, _, text in found])
    out = [Sentence(i, sec, text, register_of(text), n) for (i, sec, text), n in zip(found, sizes)]
    _smooth(out)
    return out


def _smooth(found: list[Sentence]) -> None:
    """A short run of unmarked sentences inside a paragraph whose marked neighbours in that
    paragraph are all of one register takes that register: "Whether Paul means the mercy seat
    itself remains debated" closes a paragraph on ἱλαστήριον and belongs to it. A run of
    MIN_GROUP_TOKENS or more is a discussion of its own and keeps its register."""
    i = 0
    while i < len(found):
        if found[i].register != "exposition":
            i += 1
            continue
        end = i
        while end + 1 < len(found) and found[end + 1].register == "exposition" \
                and found[end + 1].paragraph == found[i].paragraph:
            end += 1
        paragraph = found[i].paragraph
        around = {
            s.register
            for s in (found[i - 1] if i > 0 else None, found[end + 1] if end + 1 < len(found) else None)
            if s is not None and s.paragraph == paragraph
        }
        if len(around) == 1 and sum(s.tokens for s in found[i : end + 1]) < MIN_GROUP_TOKENS:
            for s in found[i : end + 1]:
                s.register = next(iter(around))
        i = end + 1


def group(sentence_list: list[Sentence], budget: int) -> list[Group]:
    groups: list[Group] = []
    for s in sentence_list:
        last = groups[-1].sentences[-1] if groups else None
        if last and last.register == s.register and last.section == s.section:
            groups[-1].sentences.append(s)
        else:
            groups.append(Group([s]))
    _merge_small(groups, budget)
    # Merging can leave two neighbours in one register; they are one discussion again.
    joined: list[Group] = []
    for g in groups:
        previous = joined[-1] if joined else None
        if previous and previous.register == g.register and previous.section == g.section \
                and previous.tokens + g.tokens <= budget:
            previous.sentences.extend(g.sentences)
        else:
            joined.append(g)
    return joined


def _merge_small(groups: list[Group], budget: int) -> None:
    """Merge each group under MIN_GROUP_TOKENS into a neighbour, smallest first. A neighbour
    sharing its paragraph is preferred (a closing remark belongs to the paragraph's discussion),
    then one the merge keeps within budget, then the smaller. A merge past the budget is allowed
    (the group is cut again later, between paragraphs or evenly between sentences): a scrap that
    stays alone is worse than a cut in the right place. Groups never merge across sections."""
    alone: set[int] = set()  # ids of small groups with no neighbour in their section
    while True:
        small = [i for i, g in enumerate(groups) if g.tokens < MIN_GROUP_TOKENS and id(g) not in alone]
        if not small:
            return
        i = min(small, key=lambda k: (groups[k].tokens, k))
        g = groups[i]
        options = []
        for j in (i - 1, i + 1):
            if not 0 <= j < len(groups) or groups[j].section != g.section:
                continue
            other = groups[j]
            if j < i:
                shares_paragraph = other.sentences[-1].paragraph == g.sentences[0].paragraph
            else:
                shares_paragraph = other.sentences[0].paragraph == g.sentences[-1].paragraph
            options.append((not shares_paragraph, other.tokens + g.tokens > budget, other.tokens, j))
        if not options:
            alone.add(id(g))
            continue
        j = min(options)[-1]
        first, second = sorted((i, j))
        groups[first] = Group(groups[first].sentences + groups[second].sentences)
        del groups[second]


# ---------------------------------------------------------------- chunks


def _header(commentary: Commentary, passage: Passage, section: str | None, register: str) -> str:
    where = passage.label + (f" — {passage.title}" if passage.title else "")
    if section:
        where += f" › {section}"
    return f"[{commentary.author}, {commentary.title} | {where} | {register}]"


def chunk(source: Source, commentary: Commentary) -> list[Chunk]:
    extra = {k: v for k, v in source.metadata.items() if k in ("tradition", "tier")}
    chunks: list[Chunk] = []
    for passage in commentary.passages:
        sections = {p.section for p in passage.paragraphs}
        # One budget for the whole passage, from its longest possible header, so a merge that
        # changes a group's register can never push it past the limit.
        longest = max(
            count_tokens([_header(commentary, passage, s, r) for s in sections for r in REGISTERS])
        )
        budget = MAX_TEXT_TOKENS - longest
        if budget < 64:
            raise SourceError(source.id, f"the headers of {passage.label!r} leave only {budget} tokens for text")
        pieces: list[tuple[Group, str]] = []
        for g in group(classify(passage), budget):
            for body in fit_paragraphs(g.paragraph_texts(), budget):
                pieces.append((g, body))
        texts = [f"{_header(commentary, passage, g.section, g.register)}\n{body}" for g, body in pieces]
        for k, ((g, body), text, tokens) in enumerate(zip(pieces, texts, count_tokens(texts)), start=1):
            crumb = [commentary.title, passage.label + (f" — {passage.title}" if passage.title else "")]
            chunks.append(
                Chunk.for_source(
                    source,
                    RULESET,
                    chunk_id=source_chunk_id(source, f"{passage.key}_{k:02d}"),
                    granularity="register",
                    text=text,
                    tokens=tokens,
                    breadcrumb=" › ".join(crumb + ([g.section] if g.section else [])),
                    refs=passage.refs,
                    ordinal=Ref.from_id(passage.refs[0]).ordinal if passage.refs else None,
                    title=commentary.title,
                    metadata={
                        "author": commentary.author,
                        "work": commentary.title,
                        "passage": passage.label,
                        "passage_title": passage.title,
                        "section": g.section,
                        "register": g.register,
                        "registers": g.registers,
                        "cited_refs": list(cited_verse_ids(body)),
                        **extra,
                    },
                )
            )
    return chunks


class Modern(HeadedProse[Commentary, Passage], chunk=chunk):
    name = "modern"
    versions = {"default": RULESET}
    granularities = frozenset({"register"})
    described = "a modern commentary source"
    work = Commentary
    outline = _Passages

    def repeated(self, passage: Passage) -> str:
        return f"passage {passage.label!r} is commented on twice; merge the two sections"

    def units(self, commentary: Commentary) -> int:
        return len(commentary.passages)


MODERN = Modern()
read, parse = MODERN.read, MODERN.parse
