"""Patristic works: books and chapters → small chunks carrying their scripture refs, topics and
disputed positions, on two fixture works read by the real reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lectio.rulesets import patristic
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.bible.refs import Ref
from lectio.sources import Source, SourceError, load_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "patristic"
SOURCES = FIXTURES / "sources.yaml"


def run(source: Source):
    return patristic.chunk(source, patristic.parse(source, patristic.read(source, None)))


@pytest.fixture(scope="module")
def treatise():
    return run(load_source(SOURCES, "severinus-grace"))


@pytest.fixture(scope="module")
def homily():
    return run(load_source(SOURCES, "severinus-baptism"))


@pytest.fixture(scope="module")
def chunks(treatise, homily):
    return treatise + homily


def body(chunk) -> str:
    return chunk.text.split("\n", 1)[1]


def containing(chunks, phrase):
    found = [c for c in chunks if phrase in " ".join(body(c).split())]
    assert found, f"no chunk contains {phrase!r}"
    return found


def scratch(tmp_path, text: str, fmt="markdown", **metadata) -> Source:
    path = tmp_path / ("work.md" if fmt == "markdown" else "work.txt")
    path.write_text(text, encoding="utf-8")
    meta = {"author": "Anonymous", "title": "A Work"} | metadata
    return Source(id="scratch", kind="patristic", format=fmt, acl=("group:staff",), path=path, metadata=meta)


# ---------------------------------------------------------------- every chunk


def test_every_chunk_carries_its_tags_acl_and_ruleset(chunks):
    for chunk in chunks:
        meta = chunk.metadata
        for key in ("topics", "disputes_positions", "scripture_refs"):
            assert isinstance(meta[key], list), (chunk.chunk_id, key)
        assert meta["topics"] == sorted(meta["topics"])
        assert meta["disputes_positions"] == sorted(meta["disputes_positions"])
        assert meta["scripture_refs"] == list(chunk.refs)
        assert meta["author"] == "Severinus of Thagora"
        assert chunk.kind == "patristic" and chunk.acl == ("public",)
        assert chunk.ruleset == patristic.RULESET and chunk.header is None
    # Tags come from a controlled vocabulary, not free text.
    vocabulary = patristic.load_vocabulary()
    assert {t for c in chunks for t in c.metadata["topics"]} <= set(vocabulary.topics)
    assert {p for c in chunks for p in c.metadata["disputes_positions"]} <= set(vocabulary.positions)


def test_no_chunk_exceeds_the_model_limit(chunks):
    # The common 300-token cap for patristic chunks is looser than the model's window: the window is the cap.
    assert patristic.RULES["max_tokens"] == MAX_TEXT_TOKENS < patristic.SEED_CAP_TOKENS
    assert count_tokens([c.text for c in chunks]) == [c.tokens for c in chunks]
    assert max(c.tokens for c in chunks) <= MAX_TEXT_TOKENS


def test_header_names_author_work_book_and_chapter(treatise, homily):
    chunk = containing(treatise, "Here the followers of Pelagius")[0]
    assert chunk.text.startswith(
        "[Severinus of Thagora, On Grace and the Will | Book 1, Chapter 2: "
        "Against those who say that nature alone suffices]\n"
    )
    assert (chunk.metadata["book"], chunk.metadata["chapter"], chunk.metadata["work"]) == (1, 2, "On Grace and the Will")
    assert chunk.breadcrumb == "On Grace and the Will › Book 1, Chapter 2: Against those who say that nature alone suffices"
    # Book II restarts its chapters; the plain-text homily has chapters and no books.
    assert {(c.metadata["book"], c.metadata["chapter"]) for c in treatise} == {(1, 1), (1, 2), (1, 3), (2, 1)}
    assert {(c.metadata["book"], c.metadata["chapter"]) for c in homily} == {(None, n) for n in (1, 2, 3, 4)}
    assert containing(homily, "Someone will ask why")[0].text.startswith(
        "[Severinus of Thagora, Homily on Holy Baptism | Chapter 2]\n"
    )


# ---------------------------------------------------------------- scripture refs


def test_scripture_refs_come_from_the_reference_parser(treatise, homily):
    pelagius = containing(treatise, "in whom all sinned (Rom. 5:12)")[0]
    assert "rom_5_12" in pelagius.metadata["scripture_refs"]
    assert pelagius.ordinal == Ref.from_id("rom_5_12").ordinal
    boast = containing(treatise, "(Eph 2:8-9)")[0]
    assert {"eph_2_8", "eph_2_9", "1cor_4_7"} <= set(boast.refs)
    assert boast.refs == tuple(sorted(boast.refs, key=lambda r: Ref.from_id(r).ordinal))
    friends = containing(homily, "(Mark 2:3-5)")[0]
    assert {"ps_51_5", "mark_2_3", "mark_2_4", "mark_2_5"} <= set(friends.refs)
    # A chunk citing nothing has no refs, and no ordinal.
    farmer = containing(treatise, "the farmer who knows that God gives the rain")[0]
    assert farmer.refs == () and farmer.ordinal is None


# ---------------------------------------------------------------- topics and positions


def test_a_paragraph_disputing_pelagius_is_tagged_pelagianism(treatise, homily):
    for phrase in ("Here the followers of Pelagius", "The Pelagians answer"):
        chunk = containing(treatise, phrase)[0]
        assert "Pelagianism" in chunk.metadata["disputes_positions"]
        assert "infant_baptism" in chunk.metadata["topics"]
    assert "original_sin" in containing(treatise, "in whom all sinned")[0].metadata["topics"]
    assert containing(treatise, "with the Manichees")[0].metadata["disputes_positions"] == ["Manichaeism"]
    assert containing(homily, "the party of Donatus")[0].metadata["disputes_positions"] == ["Donatism"]
    assert "eucharist" in containing(homily, "this is my body")[0].metadata["topics"]
    # Most chunks dispute nobody: the tag list is then empty, not missing.
    assert containing(homily, "the font stands open")[0].metadata["disputes_positions"] == []


def test_tags_match_whole_words_and_ignore_the_header(tmp_path):
    vocabulary = patristic.load_vocabulary()
    assert vocabulary.tag("Many manifold things were said.") == ([], [])
    assert vocabulary.tag("MANI taught two principles") == ([], ["Manichaeism"])
    assert "original_sin" in vocabulary.tag("Adam\u2019s sin\nruns in us")[0]  # curly quote, line break
    # The work's title ("On Grace") is in every header, yet only a body about grace gets the tag.
    source = scratch(tmp_path, "# Chapter 1\n\nThe bishop spoke of the weather.\n", title="On Grace")
    (chunk,) = run(source)
    assert chunk.text.startswith("[Anonymous, On Grace | Chapter 1]")
    assert chunk.metadata["topics"] == ["ministry"]


# ---------------------------------------------------------------- splitting


def test_a_long_paragraph_is_split_between_sentences(treatise):
    paragraph = patristic.parse(
        load_source(SOURCES, "severinus-grace"), patristic.read(load_source(SOURCES, "severinus-grace"), None)
    ).divisions[1].paragraphs[0]
    assert paragraph.startswith("Here the followers of Pelagius")
    assert count_tokens([paragraph])[0] > MAX_TEXT_TOKENS  # the fixture needs splitting
    parts = [c for c in treatise if c.metadata["chapter"] == 2 and c.metadata["book"] == 1]
    assert len(parts) >= 3 and all(c.granularity == "paragraph" for c in parts)
    assert [c.metadata["part"] for c in parts] == list(range(1, len(parts) + 1))
    for chunk in parts:
        assert re.search(r"[.?!)]$", body(chunk)), body(chunk)[-40:]  # ends at a sentence end
    # Split evenly, not into a full piece and a scrap.
    halves = [c.tokens for c in parts if "Pelagian" in body(c)]
    assert min(halves) > 0.6 * max(halves)


def test_nothing_is_dropped(treatise, homily):
    for sid, chunks in (("severinus-grace", treatise), ("severinus-baptism", homily)):
        source = load_source(SOURCES, sid)
        work = patristic.parse(source, patristic.read(source, None))
        words_in = " ".join(p for d in work.divisions for p in d.paragraphs).split()
        words_out = " ".join(body(c) for c in chunks).split()
        assert words_out == words_in
        assert all(line not in " ".join(words_out) for line in ("CHAPTER II", "# Book", "## Chapter"))


def test_whole_short_chapter_is_one_chapter_chunk(homily):
    (chunk,) = [c for c in homily if c.metadata["chapter"] == 4]
    assert chunk.granularity == "chapter" and chunk.metadata["parts"] == 1


# ---------------------------------------------------------------- ids


def test_ids_are_unique_and_stable(treatise, tmp_path):
    ids = [c.chunk_id for c in treatise]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "severinus-grace/b1_c1_01"
    assert [c.chunk_id for c in run(load_source(SOURCES, "severinus-grace"))] == ids
    # Rewriting Book II leaves every Book I chunk, id and text, as it was.
    text = (FIXTURES / "on_grace_and_the_will.md").read_text(encoding="utf-8")
    edited = text.replace("Some say that this teaching makes men careless", "Others say that this makes men idle")
    copy = tmp_path / "on_grace_and_the_will.md"
    copy.write_text(edited, encoding="utf-8")
    source = load_source(SOURCES, "severinus-grace")
    changed = run(Source(**{**source.__dict__, "path": copy}))
    before = {c.chunk_id: c.text for c in treatise if c.metadata["book"] == 1}
    after = {c.chunk_id: c.text for c in changed if c.metadata["book"] == 1}
    assert before == after
    assert {c.chunk_id: c.text for c in changed} != {c.chunk_id: c.text for c in treatise}


# ---------------------------------------------------------------- conventions and bad input


def test_roman_numbers_titles_and_plain_text_division_lines(tmp_path):
    markdown = "# The Work\n\n# Book XIV\n\n## Chapter XXVIII — Of two cities\n\nTwo loves made two cities.\n"
    (chunk,) = run(scratch(tmp_path, markdown, title=None))
    assert chunk.text == "[Anonymous, The Work | Book 14, Chapter 28: Of two cities]\nTwo loves made two cities."
    assert chunk.chunk_id == "scratch/b14_c28_01" and chunk.acl == ("group:staff",)
    text = "BOOK III\n\nCHAPTER 2\n\nA line.\nCHAPTER 3 is only mentioned here.\n\nPREFACE\n\nMore.\n"
    (chunk,) = run(scratch(tmp_path, text, fmt="text"))
    # A division line is a paragraph of its own, with its keyword in capitals.
    assert (chunk.metadata["book"], chunk.metadata["chapter"]) == (3, 2)
    assert body(chunk) == "A line. CHAPTER 3 is only mentioned here.\n\nPREFACE\n\nMore."


@pytest.mark.parametrize(
    ("text", "metadata", "problem"),
    [
        ("# Chapter 1\n\nOne.\n\n# Chapter 1\n\nAgain.\n", {}, "occurs more than once"),
        ("# Chapter 1\n\nOne.\n", {"author": None}, "needs an 'author'"),
        ("# Book IIX\n\nOne.\n", {}, "not a roman number"),
        ("# Chapter 1\n\n# Chapter 2\n", {}, "no paragraphs"),
    ],
)
def test_bad_input_is_a_source_error(tmp_path, text, metadata, problem):
    source = scratch(tmp_path, text)
    source = Source(**{**source.__dict__, "metadata": {**source.metadata, **metadata}})
    with pytest.raises(SourceError, match=problem) as caught:
        run(source)
    assert caught.value.source_id == "scratch"
