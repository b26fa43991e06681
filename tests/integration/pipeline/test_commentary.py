"""Commentary through the real SWORD reader on a few chapters of the three real modules:
Matthew Henry's Concise (mhcc), Spurgeon's Treasury of David (tdavid), Scofield's notes
(downloaded on first use; the markup parser on its own: tests/unit/readers/test_sword_commentary.py)."""

import re
from collections import Counter

import pytest

from lectio.rulesets import commentary
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.readers.sword_commentary import osis_ref_ids, read_sword_commentary
from lectio.bible.refs import Ref
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import last_sentence

pytestmark = pytest.mark.network

WORKS = {
    "mhcc": ("Concise Commentary", "Matthew Henry"),
    "tdavid": ("The Treasury of David", "C. H. Spurgeon"),
    "scofield": ("Scofield Reference Notes", "C. I. Scofield"),
}


def source(module: str, select: str | None) -> Source:
    title, author = WORKS[module]
    return Source(
        id=module, kind="commentary", format="sword-commentary", acl=("public", "group:staff"),
        module=module, select=select,
        metadata={"title": title, "author": author, "tradition": "Protestant", "tier": "classic"},
    )


def run(settings, module: str, select: str):
    src = source(module, select)
    raw = commentary.read(src, settings.corpus_dir)
    parsed = commentary.parse(src, raw)
    return src, raw, parsed, commentary.chunk(src, parsed)


@pytest.fixture(scope="module")
def mhcc(settings):
    return run(settings, "mhcc", "Romans 8")


@pytest.fixture(scope="module")
def tdavid(settings):
    return run(settings, "tdavid", "Psalm 23")


@pytest.fixture(scope="module")
def scofield(settings):
    return run(settings, "scofield", "Romans 8-9")


def body(chunk) -> str:
    return chunk.text.split("\n\n", 1)[1]


# ---------------------------------------------------------------- every chunk, every module


@pytest.mark.parametrize("name", ["mhcc", "tdavid", "scofield"])
def test_every_chunk_fits_the_model_header_included_and_carries_its_context(name, request):
    src, _, _, chunks = request.getfixturevalue(name)
    assert chunks
    assert count_tokens([c.text for c in chunks]) == [c.tokens for c in chunks]
    title, author = WORKS[name]
    for chunk in chunks:
        assert chunk.tokens <= MAX_TEXT_TOKENS
        head, text = chunk.text.split("\n\n", 1)
        assert head.startswith("[Commentary on ") and head.endswith("]") and text.strip()
        assert f'| {author}, "{title}"' in head
        assert chunk.refs and chunk.ordinal == Ref.from_id(chunk.refs[0]).ordinal
        assert (chunk.kind, chunk.granularity, chunk.acl) == ("commentary", "commentary", src.acl)
        assert chunk.ruleset == commentary.RULESET and chunk.header is None and chunk.parent_id is None
        assert chunk.breadcrumb.startswith(title)
        meta = chunk.metadata
        assert chunk.chunk_id.startswith(meta["entry_id"] + "_")
        assert (meta["module"], meta["author"], meta["tradition"], meta["tier"]) == (name, author, "Protestant", "classic")
    assert len({c.chunk_id for c in chunks}) == len(chunks)


@pytest.mark.parametrize("name", ["mhcc", "scofield"])
def test_ids_are_stable_across_runs(name, request, settings):
    src, raw, _, chunks = request.getfixturevalue(name)
    again = commentary.chunk(src, commentary.parse(src, commentary.read(src, settings.corpus_dir)))
    assert [(c.chunk_id, c.text) for c in again] == [(c.chunk_id, c.text) for c in chunks]
    assert commentary.read(src, settings.corpus_dir).content_hash == raw.content_hash


# ---------------------------------------------------------------- Matthew Henry


def test_mhcc_entries_repeated_across_their_verses_are_read_once(settings):
    library = settings.corpus_dir / "sword" / "usr" / "share" / "sword"
    _, entries, slots = read_sword_commentary(library, "mhcc", lambda book, chapter: (book, chapter) == ("Rom", 8))
    spans = [(e.first_verse, e.last_verse) for e in entries]
    # The module stores 39 verse slots for Romans 8; its comments are six ranges.
    assert spans == [(1, 9), (10, 17), (18, 25), (26, 27), (28, 31), (32, 39)]
    assert slots == 39


def test_mhcc_romans_8_28_31_is_one_entry_with_its_range_and_outline_title(mhcc):
    _, _, _, chunks = mhcc
    golden = [c for c in chunks if c.metadata["entry_id"] == "mhcc/rom_8_28_31"]
    assert len(golden) >= 2  # long enough to split
    for chunk in golden:
        assert chunk.refs == ("rom_8_28", "rom_8_29", "rom_8_30", "rom_8_31")
        assert chunk.text.startswith(
            '[Commentary on Romans 8:28-31 | Matthew Henry, "Concise Commentary" | '
            "Section: Their interest in the love of God.]\n\n"
        )
    opening = "That is good for the saints which does their souls good."
    assert sum(opening in c.text for c in chunks) == 1  # not once per verse of the range
    assert [c.chunk_id for c in golden] == [f"mhcc/rom_8_28_31_{i:04d}" for i in range(1, len(golden) + 1)]


def test_mhcc_chapter_outline_is_a_chapter_chunk_and_no_heading_is_lost(mhcc):
    _, _, parsed, chunks = mhcc
    outline = [c for c in chunks if c.metadata["section"] == "Chapter Outline"]
    assert len(outline) == 1
    assert outline[0].refs == tuple(f"rom_8_{v}" for v in range(1, 40))
    assert "Their final triumph, through Christ. (32-39)" in outline[0].text
    # Every comment's "Verses a-b" heading became its range: six ranges, every verse once.
    ranges = [u.verses for u in parsed.units if u.scope == "verses"]
    assert sorted(v for r in ranges for v in r) == list(range(1, 40))


def test_split_pieces_repeat_the_previous_pieces_last_sentence(mhcc):
    _, _, _, chunks = mhcc
    carried = 0
    for previous, chunk in zip(chunks, chunks[1:]):
        if chunk.metadata["piece"] == 1:
            continue
        assert previous.metadata["entry_id"] == chunk.metadata["entry_id"]
        sentence = last_sentence(body(previous))
        if chunk.metadata["overlap"]:
            assert body(chunk).startswith(sentence + " ")
            carried += 1
        else:
            assert not body(chunk).startswith(sentence)
    assert carried >= 5


def test_mhcc_one_line_comments_gather_into_chunks_just_over_the_floor(settings):
    _, _, parsed, chunks = run(settings, "mhcc", "Proverbs 19")
    assert len(parsed.units) == 29 and all(len(u.verses) == 1 for u in parsed.units)  # a line a verse
    gathered = [e for c in chunks for e in c.metadata["entry_ids"]]
    assert sorted(gathered) == sorted(u.entry_id for u in parsed.units)  # each comment once
    assert 5 < len(chunks) < 15  # neither 29 one-liners nor a few window-filling bundles
    for chunk in chunks:
        assert len(chunk.metadata["entry_ids"]) > 1
        first, last = Ref.from_id(chunk.refs[0]).verse, Ref.from_id(chunk.refs[-1]).verse
        assert chunk.refs == tuple(f"prov_19_{v}" for v in range(first, last + 1))
        assert chunk.text.startswith(f"[Commentary on Proverbs 19:{first}-{last} | ")
        assert all(f"\n\nVerse {v}. " in chunk.text for v in range(first, last + 1))
        assert count_tokens([body(chunk)])[0] >= commentary.MIN_UNIT_TOKENS


# ---------------------------------------------------------------- Treasury of David


def test_tdavid_psalm_is_cut_at_its_sections_then_verses(tdavid):
    _, _, parsed, chunks = tdavid
    order = list(dict.fromkeys(c.metadata["section"] for c in chunks))
    assert order[:4] == ["Overview", "Exposition", "Explanatory Notes and Quaint Sayings", "Hints to the Village Preacher"]
    exposition = [c for c in chunks if c.metadata["section"] == "Exposition"]
    assert {c.refs for c in exposition} == {(f"ps_23_{v}",) for v in range(1, 7)}
    verse_4 = [c for c in exposition if c.refs == ("ps_23_4",)]
    assert len(verse_4) > 2 and body(verse_4[0]).startswith("Verse 4.")
    overview = [c for c in chunks if c.metadata["section"] == "Overview"]
    assert overview and all(c.refs == tuple(f"ps_23_{v}" for v in range(1, 7)) for c in overview)
    assert overview[0].text.startswith('[Commentary on Psalms 23 | C. H. Spurgeon, "The Treasury of David" | Section: Overview]')


def test_tdavid_splits_at_paragraphs_before_sentences(tdavid):
    """A piece begins where a paragraph begins unless its paragraph is itself too long."""
    src, _, parsed, chunks = tdavid
    reserve = commentary.OVERLAP_RESERVE_TOKENS
    paragraphs = [p for u in parsed.units for p in u.paragraphs]
    sizes = dict(zip(paragraphs, count_tokens(paragraphs)))
    checked = 0
    for previous, chunk in zip(chunks, chunks[1:]):
        if chunk.metadata["piece"] == 1:
            continue
        text = body(chunk)
        if chunk.metadata["overlap"]:
            text = text[len(last_sentence(body(previous))) + 1 :]
        limit = MAX_TEXT_TOKENS - count_tokens([chunk.text.split("\n\n", 1)[0]])[0] - reserve
        # Compared without whitespace: re-joined sentences may differ in it from the paragraph.
        probe = re.sub(r"\s+", "", text)[:40]
        home = next(p for p in paragraphs if probe in re.sub(r"\s+", "", p))
        assert re.sub(r"\s+", "", home).startswith(probe) or sizes[home] > limit
        checked += 1
    assert checked > 50


def test_tdavid_merges_tiny_units_within_a_section(tdavid):
    _, _, parsed, chunks = tdavid
    merged = [c for c in chunks if c.metadata["units"] > 1]
    assert merged
    for chunk in merged:
        assert chunk.metadata["pieces"] == 1  # units are merged only when they fit together
        if chunk.metadata["scope"] == "verses":
            units = [u for u in parsed.units if u.section == chunk.metadata["section"] and u.scope == "verses"]
            assert set(chunk.refs) <= {f"ps_23_{v}" for u in units for v in u.verses}
    hints = [c for c in merged if c.metadata["section"] == "Hints to the Village Preacher"]
    assert any(len(c.refs) > 1 for c in hints)  # one-line sermon hints on several verses, together
    for chunk in hints:
        assert chunk.metadata["passage"] == chunk.text[len("[Commentary on ") :].split(" | ")[0]


# ---------------------------------------------------------------- Scofield


def test_scofield_notes_carry_headwords_and_cross_references(scofield):
    _, _, _, chunks = scofield
    note = next(c for c in chunks if c.refs == ("rom_8_2",))
    assert note.metadata["headwords"] == ["Spirit", "sin"]
    assert note.text.startswith('[Commentary on Romans 8:2 | C. I. Scofield, "Scofield Reference Notes" | Section: Spirit; sin]')
    cross = note.metadata["cross_refs"]
    # "ro 3:21-ro 5:11" runs across chapters: 11 + 25 + 11 verses, from the KJV verse counts.
    span = [f"rom_3_{v}" for v in range(21, 32)] + [f"rom_4_{v}" for v in range(1, 26)] + [f"rom_5_{v}" for v in range(1, 12)]
    assert cross[0] == "rom_5_5" and all(ref in cross for ref in span)
    assert note.metadata["see_notes"] == ["exod_14_30", "rom_5_21"]  # links to other notes


def test_scofield_note_leaked_into_next_chapter_is_skipped_and_counted(scofield):
    _, raw, parsed, chunks = scofield
    assert ("scofield/rom_9_1", "repeats the note at Rom 8:39") in parsed.skipped
    assert not [c for c in chunks if "rom_9_1" in c.refs]
    assert len(parsed.units) + len(parsed.skipped) == raw.units  # one unit per note read


@pytest.mark.parametrize(
    "osis_ref, expected",
    [
        ("ro 8:17 ro 8:21", ["rom_8_17", "rom_8_21"]),
        ("jer 4:23-27", [f"jer_4_{v}" for v in range(23, 28)]),
        ("Ps.57.7-Ps.57.11", [f"ps_57_{v}" for v in range(7, 12)]),
        ("jud 1", [f"judg_1_{v}" for v in range(1, 37)]),  # Judges in this module, not Jude
        ("Scofield:Heb 1:4", ["heb_1_4"]),
        ("Rev 4:1 11:1", ["rev_4_1", "rev_11_1"]),
    ],
)
def test_osis_references_become_verse_ids(mhcc, osis_ref, expected):
    _, _, parsed, _ = mhcc
    assert osis_ref_ids(osis_ref, parsed.chapter_lengths) == (expected, 0)


def test_references_to_verses_that_do_not_exist_are_counted_not_invented(mhcc):
    _, _, parsed, _ = mhcc
    assert osis_ref_ids("phm 3:1 ro 8:1", parsed.chapter_lengths) == (["rom_8_1"], 1)


# ---------------------------------------------------------------- markup and bad input


def test_bad_sources_fail_with_a_clear_error(settings):
    with pytest.raises(SourceError, match="needs a 'module'"):
        commentary.read(Source(id="c", kind="commentary", format="sword-commentary", acl=("public",), path=settings.corpus_dir), settings.corpus_dir)
    with pytest.raises(SourceError, match="no known Debian package"):
        commentary.read(Source(id="c", kind="commentary", format="sword-commentary", acl=("public",), module="nosuchcomm"), settings.corpus_dir)
    with pytest.raises(SourceError, match="'select'"):
        commentary.read(source("tdavid", "Hezekiah 3"), settings.corpus_dir)
    # Treasury of David comments on the Psalms only.
    with pytest.raises(SourceError, match="no entries in 'select'"):
        commentary.read(source("tdavid", "Romans 8"), settings.corpus_dir)


def test_outline_sections_every_comment_in_romans_8(mhcc):
    _, _, _, chunks = mhcc
    sections = Counter(c.metadata["section"] for c in chunks if c.metadata["scope"] == "verses")
    assert set(sections) == {
        "The freedom of believers from condemnation.",
        "Their privileges as being the children of God.",
        "Their hopeful prospects under tribulations.",
        "Their assistance from the Spirit in prayer.",
        "Their interest in the love of God.",
        "Their final triumph, through Christ.",
    }
