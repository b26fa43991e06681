"""Scripture from a SWORD Bible module: raw verses → verse structure → verse and pericope chunks.

The verse is the natural retrieval unit, and a pericope (a multi-verse argument or narrative) is
indexed beside it so a query about a whole passage can match the passage.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from lectio.bible.books import BOOKS, book_by_id, book_by_osis, find_book
from lectio.rulesets.chunk import Chunk, ruleset_version
from lectio.readers.corpus import CorpusError, ensure_sword_module
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens, tokenizer
from lectio.bible.pericopes import ATTRIBUTION, assign_pericopes, load_pericopes
from lectio.readers.raw import RawText, hash_parts
from lectio.readers.sword_bible import MAX_VERSE_CHARS, parse_verse, read_sword_bible
from lectio.bible.refs import UnknownReference, parse_reference
from lectio.rulesets.base import Ruleset
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import sentences

# Named rulesets a source picks with `chunking:`. "structural" is lectio's; "chapter" and
# "fixed-512" are common baselines (a chapter per chunk, fixed 512-token windows), kept to measure
# the gain against.
RULES = {
    "structural": {
        "granularities": ["verse", "pericope", "paragraph"],
        "pericopes": "biblelib BSB",
        "pericope_text": "title line, then the verses joined by spaces",
        "uncovered_verses": "join the preceding pericope of the book",
        "paragraph_context_sentences": 2,
        "paragraph_max_tokens": MAX_TEXT_TOKENS,
        "split_paragraph_context": "each piece's neighbouring piece, or the neighbouring paragraph at the paragraph's ends",
        "paragraph_answer": "its own verses, without the neighbours' sentences",
        "revision": 4,
    },
    "chapter": {"granularities": ["chapter"], "revision": 1},
    "fixed-512": {"granularities": ["window"], "window_tokens": 512, "overlap_tokens": 64, "revision": 1},
}
RULESETS = {name: ruleset_version(f"scripture-{name}", rules) for name, rules in RULES.items()}
RULESET = RULESETS["structural"]
# Rules a source may override with `rules:` in the sources file, with their allowed range. This is
# how a migration tries a candidate: the overridden rules are hashed into the ruleset
# version like any other rule, so the candidate's chunks are a new index version.
TUNABLE = {
    "structural": {"paragraph_context_sentences": (0, 5), "paragraph_max_tokens": (32, MAX_TEXT_TOKENS)},
    "fixed-512": {"window_tokens": (32, 2048), "overlap_tokens": (0, 1024)},
}


def effective_rules(source: Source) -> tuple[str, dict, str]:
    """(ruleset name, its rules with the source's overrides, their version) for a source."""
    name = source.chunking or "structural"
    if name not in RULES:
        raise SourceError(source.id, f"unknown scripture chunking {name!r}; expected one of {', '.join(RULES)}")
    allowed = TUNABLE.get(name, {})
    for rule, value in source.rules.items():
        if rule not in allowed:
            names = ", ".join(allowed) or "none"
            raise SourceError(source.id, f"scripture chunking {name!r} has no tunable rule {rule!r} (tunable: {names})")
        low, high = allowed[rule]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SourceError(source.id, f"rule {rule!r} must be a whole number from {low} to {high}, got {value!r}")
    rules = {**RULES[name], **source.rules}
    if name == "fixed-512" and rules["overlap_tokens"] >= rules["window_tokens"]:
        raise SourceError(source.id, "rule 'overlap_tokens' must be smaller than 'window_tokens'")
    # Unchanged rules hash to the named ruleset's own version, so an override equal to the
    # default is no change.
    return name, rules, ruleset_version(f"scripture-{name}", rules)


# ---------------------------------------------------------------- raw texts


def read(source: Source, corpus_dir: Path) -> RawText:
    if source.path is not None:
        library, module = source.path, source.module
        if not (library / "mods.d").is_dir():
            raise SourceError(source.id, f"{library} is not a SWORD library (no mods.d folder)")
    else:
        module = source.module
        try:
            library = ensure_sword_module(corpus_dir, module)
        except CorpusError as exc:
            raise SourceError(source.id, str(exc)) from None
    if not module:
        raise SourceError(source.id, "format 'sword-bible' needs a 'module' name")
    select = chapter_filter(source)
    try:
        verses = list(read_sword_bible(library, module, select))
    except (ValueError, OSError) as exc:
        raise SourceError(source.id, f"cannot read SWORD module {module!r}: {exc}") from None
    if not verses:
        raise SourceError(source.id, f"SWORD module {module!r} has no verses" + (" in 'select'" if select else ""))
    return RawText(
        source.id,
        hash_parts(f"{v.book_osis}.{v.chapter}.{v.verse}\t{v.markup}" for v in verses),
        verses,
        units=len(verses),
    )


def chapter_share(source: Source) -> float:
    """The share of the Bible's chapters a `select` reads (1 without one, 0 where it names nothing
    real): what part of a module a source reads, for what its inputs weigh."""
    try:
        wanted = chapter_filter(source)
    except SourceError:
        return 0.0
    if wanted is None:
        return 1.0
    chapters = [(book.osis, chapter) for book in BOOKS for chapter in range(1, book.chapters + 1)]
    return sum(wanted(*c) for c in chapters) / len(chapters)


def chapter_filter(source: Source):
    """`select: "Philippians; Romans 5-8"` reads only those books or chapters (tests, demos)."""
    if not source.select:
        return None
    spans = []  # (first ordinal, last ordinal)
    for part in str(source.select).split(";"):
        book = find_book(part.strip())
        if book is not None:
            spans.append((book.number * 1_000_000, book.number * 1_000_000 + 999_999))
            continue
        try:
            ranges = parse_reference(part)
        except UnknownReference as exc:
            raise SourceError(source.id, f"'select' names no real passage: {exc}") from None
        if not ranges:
            raise SourceError(source.id, f"'select' part {part.strip()!r} is not a book or reference")
        spans.extend((r.start_ordinal, r.end_ordinal) for r in ranges)

    def wanted(book_osis: str, chapter: int) -> bool:
        number = book_by_osis(book_osis).number
        first, last = number * 1_000_000 + chapter * 1_000, number * 1_000_000 + chapter * 1_000 + 999
        return any(start <= last and first <= end for start, end in spans)

    return wanted


# ---------------------------------------------------------------- parsed structure


def parse(source: Source, raw: RawText) -> pd.DataFrame:
    """One row per verse slot: book, chapter, verse, clean text, paragraph start, Strong's."""
    rows = []
    for v in raw.payload:
        book = book_by_osis(v.book_osis)
        parsed = parse_verse(v.markup, chapter_start=v.verse == 1)
        if len(parsed.text) > MAX_VERSE_CHARS:
            # No verse is that long: non-verse matter (a glossary, an appendix) leaked in.
            raise SourceError(
                source.id,
                f"{book.name} {v.chapter}:{v.verse} is {len(parsed.text)} characters long "
                f"(limit {MAX_VERSE_CHARS}); the module's markup was not understood",
            )
        rows.append(
            {
                "ref": f"{book.id}_{v.chapter}_{v.verse}",
                "book": book.id,
                "book_number": book.number,
                "chapter": v.chapter,
                "verse": v.verse,
                "ordinal": book.number * 1_000_000 + v.chapter * 1_000 + v.verse,
                "text": parsed.text,
                "paragraph_start": parsed.paragraph_start,
                "strongs": list(parsed.strongs),
                "titles": list(parsed.titles),
                "dropped_chars": parsed.dropped_chars,
            }
        )
    return pd.DataFrame(rows)


def empty_verses(structure: pd.DataFrame) -> list[str]:
    return structure.loc[structure["text"] == "", "ref"].tolist()


# ---------------------------------------------------------------- chunks


def chunk(source: Source, structure: pd.DataFrame) -> list[Chunk]:
    name, rules, version = effective_rules(source)
    verses = _records(structure[structure["text"] != ""])
    suffix = translation_code(source)
    if name == "structural":
        pericopes, parent_of, pericope_of = _pericopes(verses, source, suffix)
        specs = _verses(verses, source, suffix, parent_of, pericope_of) + pericopes + _paragraphs(verses, source, suffix, rules)
    elif name == "chapter":
        specs = _chapters(verses, source, suffix)
    else:
        specs = _fixed_windows(verses, source, suffix, **{k: rules[k] for k in ("window_tokens", "overlap_tokens")})
    return _to_chunks(specs, source, version)


# A scripture chunk id ends in its source's translation code (`rom_8_28_web`, `rom_8_28_29_web_para`),
# so one verse keeps one id however its source is named. A code that starts with a letter and
# holds no '_' is never read as a verse number or a part of a reference: no two codes make one
# id. Two sources with one code make the same ids, and the index build fails the later one.
_CODE = re.compile(r"[a-z][a-z0-9.-]*")


def translation_code(source: Source) -> str:
    """The code that ends the source's chunk ids: its `translation:`, else its id, lower case."""
    given = str(source.translation or source.id)
    code = given.lower()
    if not _CODE.fullmatch(code):
        field = "translation" if source.translation else "id"
        raise SourceError(source.id, f"{field} {given!r} cannot end chunk ids: a translation code starts with a "
                                     "letter and holds only letters, digits, '.' and '-' (set 'translation:', e.g. WEB)")
    return code


_VERSE_FIELDS = ["ref", "book", "book_number", "chapter", "verse", "ordinal", "text", "paragraph_start", "strongs"]


def _records(verses: pd.DataFrame) -> list[tuple]:
    """The verses as plain named tuples of Python values: the rules walk them one by one and
    in slices, where reaching a DataFrame row costs far more than the rule itself."""
    return list(verses[_VERSE_FIELDS].itertuples(index=False, name="Verse"))


def _to_chunks(specs: list[dict], source: Source, ruleset: str) -> list[Chunk]:
    tokens = count_tokens([s["text"] for s in specs])
    chunks = []
    for spec, n in zip(specs, tokens):
        book = book_by_id(spec["book"])
        chunks.append(
            Chunk.for_source(
                source,
                ruleset,
                tokens=n,
                translation=source.translation,
                testament=book.testament,
                genre=book.genre,
                breadcrumb=f"{source.title} › {book.name} {spec['chapter']}",
                **spec,
            )
        )
    return chunks


def _span(rows: list[tuple], source: Source, suffix: str, label_suffix: str = "") -> dict:
    """Fields shared by every chunk that covers a run of verses."""
    first, last = rows[0], rows[-1]
    if first.ref == last.ref:
        # One verse: the id keeps the span's form (first ref, then the end), the label names the verse.
        end = f"{last.verse}"
        label = _label(first)
    elif first.book != last.book:
        end = f"{last.book}_{last.chapter}_{last.verse}"
        label = f"{_label(first)}-{_label(last)}"
    elif first.chapter != last.chapter:
        end = f"{last.chapter}_{last.verse}"
        label = f"{_label(first)}-{last.chapter}:{last.verse}"
    else:
        end = f"{last.verse}"
        label = f"{_label(first)}-{last.verse}"
    return dict(
        chunk_id=f"{first.ref}_{end}_{suffix}{label_suffix}",
        header=f"{label} ({source.translation or source.id})",
        refs=tuple(v.ref for v in rows),
        ordinal=int(first.ordinal),
        book=first.book,
        chapter=int(first.chapter),
        verse=int(first.verse),
        metadata={"start_ref": first.ref, "end_ref": last.ref},
    )


def _pericopes(verses: list[tuple], source: Source, suffix: str) -> tuple[list[dict], dict, list]:
    """Pericope chunks, each pericope's chunk id, and each verse's pericope (None: no table
    entry in its book)."""
    pericopes = load_pericopes()
    pericope_of = assign_pericopes([(v.book_number, v.chapter, v.verse) for v in verses], pericopes).indices
    members: dict[int, list[tuple]] = {}  # in order of first verse, as the verses run
    for verse, index in zip(verses, pericope_of):
        if index is not None:
            members.setdefault(index, []).append(verse)
    specs, parent_of = [], {}
    for index, group in members.items():
        title = pericopes[index].title
        spec = _span(group, source, suffix)
        spec.update(granularity="pericope", text=f"{title}\n" + " ".join(v.text for v in group), title=title)
        spec["metadata"].update(theme=title, attribution=ATTRIBUTION)
        parent_of[index] = spec["chunk_id"]
        specs.append(spec)
    return specs, parent_of, pericope_of


def _verses(verses: list[tuple], source: Source, suffix: str, parent_of: dict, pericope_of: list) -> list[dict]:
    return [
        dict(
            chunk_id=f"{v.ref}_{suffix}",
            granularity="verse",
            text=v.text,
            header=f"{_label(v)} ({source.translation or source.id})",
            parent_id=None if pericope is None else parent_of.get(pericope),
            refs=(v.ref,),
            ordinal=int(v.ordinal),
            book=v.book,
            chapter=int(v.chapter),
            verse=int(v.verse),
            metadata={"paragraph_start": bool(v.paragraph_start), "strongs": list(v.strongs)},
        )
        for v, pericope in zip(verses, pericope_of)
    ]


def _paragraphs(verses: list[tuple], source: Source, suffix: str, rules: dict) -> list[dict]:
    """Each paragraph with two sentences of its neighbours either side, within the model's
    window; a paragraph too long for it is cut at verse boundaries (poetry has few marks), and
    each piece's neighbours are the text just before and after the piece: the neighbouring
    pieces of its paragraph, or the neighbouring paragraphs at the paragraph's two ends."""
    context, limit = rules["paragraph_context_sentences"], rules["paragraph_max_tokens"]
    groups = _paragraph_groups(verses)
    texts = [" ".join(v.text for v in g) for g in groups]
    verse_tokens = dict(zip((v.ref for v in verses), count_tokens([v.text for v in verses])))
    sentences_of = [sentences(t) for t in texts]
    pieces = []  # (verses of the piece, the options from most context to none)
    for i, group in enumerate(groups):
        same_book = lambda j: 0 <= j < len(groups) and groups[j][0].book == group[0].book  # noqa: E731
        paragraph_before = sentences_of[i - 1] if same_book(i - 1) else []
        paragraph_after = sentences_of[i + 1] if same_book(i + 1) else []
        # Room for the verses once the neighbouring paragraphs' context is set aside: an estimate
        # for the inner pieces too, whose context (the next piece's sentences) the options below fit.
        window = [" ".join(paragraph_before[-context:]), " ".join(paragraph_after[:context])]
        budget = limit - sum(count_tokens(window)) - 2
        cut = _pack_verses(group, verse_tokens, max(budget, limit // 2))
        cores = [" ".join(v.text for v in piece) for piece in cut]
        for k, (piece, core) in enumerate(zip(cut, cores)):
            # Within the book, the text just before the piece and just after it: an unsplit
            # paragraph's neighbours are the paragraphs either side.
            before = sentences(cores[k - 1]) if k > 0 else paragraph_before
            after = sentences(cores[k + 1]) if k + 1 < len(cut) else paragraph_after
            # Two sentences of context each side where they fit, else one, else none: the
            # piece's own verses are never cut to make room.
            options = [[" ".join(before[len(before) - n :]) if n else "", core, " ".join(after[:n])] for n in range(context, -1, -1)]
            pieces.append((piece, options))
    count_tokens(["\n".join(t for t in options[0] if t) for _, options in pieces])  # one batch; most fit with full context
    specs = []
    for piece, options in pieces:
        for n, (lead, core, tail) in zip(range(context, -1, -1), options):
            text = "\n".join(t for t in (lead, core, tail) if t)
            if count_tokens([text])[0] <= limit:
                break
        spec = _span(piece, source, suffix, "_para")
        spec.update(granularity="paragraph", text=text)
        spec["metadata"]["context_sentences"] = n
        # The neighbours' sentences help the paragraph be found, but they are not the verses its
        # header names: an answer carries only `text[start:end]`.
        start = len(lead) + 1 if lead else 0
        spec["metadata"]["answer_span"] = [start, start + len(core)]
        specs.append(spec)
    return specs


def _paragraph_groups(verses: list[tuple]) -> list[list[tuple]]:
    """Runs of verses from one paragraph start to the next; a new book or chapter starts one."""
    groups: list[list[tuple]] = []
    previous = None
    for verse in verses:
        if previous is None or verse.paragraph_start or (verse.book, verse.chapter) != (previous.book, previous.chapter):
            groups.append([])
        groups[-1].append(verse)
        previous = verse
    return groups


def _pack_verses(group: list[tuple], verse_tokens: dict, budget: int) -> list[list[tuple]]:
    pieces, start, used = [], 0, 0
    for position, verse in enumerate(group):
        size = verse_tokens[verse.ref] + 1
        if position > start and used + size > budget:
            pieces.append(group[start:position])
            start, used = position, 0
        used += size
    pieces.append(group[start:])
    return pieces


def _runs(verses: list[tuple], key) -> list[list[tuple]]:
    """Verses grouped by key, groups in the order of their first verse."""
    runs: dict = {}
    for verse in verses:
        runs.setdefault(key(verse), []).append(verse)
    return list(runs.values())


def _chapters(verses: list[tuple], source: Source, suffix: str) -> list[dict]:
    specs = []
    for group in _runs(verses, lambda v: (v.book_number, v.chapter)):
        first = group[0]
        spec = _span(group, source, suffix)
        spec.update(
            chunk_id=f"{first.book}_{first.chapter}_{suffix}_chapter",
            header=f"{book_by_id(first.book).name} {first.chapter} ({source.translation or source.id})",
            granularity="chapter",
            text=" ".join(v.text for v in group),
        )
        specs.append(spec)
    return specs


def _fixed_windows(verses: list[tuple], source: Source, suffix: str, window_tokens: int, overlap_tokens: int) -> list[dict]:
    """The generic baseline: each book as one token stream cut every window_tokens with overlap,
    blind to verses, paragraphs and chapters; a window covers every verse it touches."""
    specs = []
    for book in _runs(verses, lambda v: v.book_number):
        text, spans, position = "", [], 0
        for verse in book:
            spans.append((position, position + len(verse.text)))
            text += verse.text + " "
            position = len(text)
        encoding = tokenizer().encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        step = window_tokens - overlap_tokens
        for number, start in enumerate(range(0, max(len(offsets) - overlap_tokens, 1), step), start=1):
            end = min(start + window_tokens, len(offsets))
            first_char, last_char = offsets[start][0], offsets[end - 1][1]
            inside = [i for i, (a, b) in enumerate(spans) if a < last_char and b > first_char]
            rows = book[inside[0] : inside[-1] + 1]
            spec = _span(rows, source, suffix)
            spec.update(
                chunk_id=f"{rows[0].book}_w{number:04d}_{suffix}_fixed",
                granularity="window",
                text=text[first_char:last_char],
            )
            specs.append(spec)
    return specs


def _label(verse) -> str:
    return f"{book_by_id(verse.book).name} {verse.chapter}:{verse.verse}"


class Scripture(Ruleset[pd.DataFrame], read=read, parse=parse, chunk=chunk):
    """The structure is one row per verse slot (see `parse`)."""

    name = "scripture"
    versions = RULESETS
    granularities = frozenset({"verse", "pericope", "paragraph", "chapter", "window"})
    # Pericopes, chapters and fixed windows are longer than the model's window by design; a verse
    # or a paragraph is held to it like any other chunk.
    window_embedded = frozenset({"pericope", "chapter", "window"})
    tunable = True  # within TUNABLE's ranges (effective_rules)

    def facts(self, structure: pd.DataFrame) -> dict:
        """Verse counts, the empty slots listed rather than dropped."""
        empty = empty_verses(structure)
        return {
            "verse_slots": len(structure),
            "verses": len(structure) - len(empty),
            "empty_verses": len(empty),
            "empty_verse_refs": ", ".join(empty) or "none",
            "paragraph_starts": int(structure["paragraph_start"].sum()),
            "books": int(structure["book"].nunique()),
            "chapters": int(structure[["book", "chapter"]].drop_duplicates().shape[0]),
        }


SCRIPTURE = Scripture()
