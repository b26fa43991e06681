"""Modern scholarship: split at passage boundaries, then at register shifts, on a
fixture commentary read by the real reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from lectio.rulesets import modern
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.bible.refs import Ref
from lectio.sources import Source, SourceError, load_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "modern"
SOURCES = FIXTURES / "sources.yaml"
ROMANS_3 = tuple(f"rom_3_{v}" for v in range(21, 27))
ROMANS_8 = ("rom_8_28", "rom_8_29", "rom_8_30")


def run(source: Source):
    return modern.chunk(source, modern.parse(source, modern.read(source, None)))


@pytest.fixture(scope="module")
def chunks():
    return run(load_source(SOURCES, "carrow-romans"))


def body(chunk) -> str:
    return chunk.text.split("\n", 1)[1]


def starting(chunks, opening):
    found = [c for c in chunks if body(c).startswith(opening)]
    assert len(found) == 1, f"{len(found)} chunks start with {opening!r}"
    return found[0]


def previous(chunks, chunk):
    return chunks[chunks.index(chunk) - 1]


def scratch(tmp_path, text: str, fmt="markdown") -> Source:
    path = tmp_path / ("notes.md" if fmt == "markdown" else "notes.txt")
    path.write_text(text, encoding="utf-8")
    return Source(
        id="scratch", kind="modern", format=fmt, acl=("user:alice",), path=path,
        metadata={"author": "A. Scholar", "title": "Commentary"},
    )


# ---------------------------------------------------------------- registers


@pytest.mark.parametrize(
    ("sentence", "register"),
    [
        ("The noun ἱλαστήριον is the crux.", "grammar"),
        ("It renders the Hebrew כַּפֹּרֶת here.", "grammar"),
        ("The genitive is best read as subjective.", "grammar"),
        ("At Qumran the hymns confess the same.", "background"),
        ("The scroll 4QMMT is often compared.", "background"),
        ("Josephus describes the high priest's entry.", "background"),
        ("Believers today may take comfort.", "application"),
        ("Our preaching must hold both together.", "application"),
        # Authorial "we" and "our text" are the commentator's voice, not application.
        ("As we have seen, Paul turns to the law; our passage continues the thought.", "exposition"),
        ("The church at Rome was mixed.", "exposition"),
        ("Paul's argument reaches its climax.", "exposition"),
        # Script outranks everything else in one sentence.
        ("Today we still debate what Josephus meant by ἱλασμός.", "grammar"),
    ],
)
def test_register_of_a_sentence(sentence, register):
    assert modern.register_of(sentence) == register


# ---------------------------------------------------------------- the fixture commentary


def test_passages_give_every_chunk_its_refs(chunks):
    passages = {c.metadata["passage"] for c in chunks}
    assert passages == {"Romans 3:21-26", "Romans 8:28-30"}
    for chunk in chunks:
        expected = ROMANS_3 if chunk.metadata["passage"] == "Romans 3:21-26" else ROMANS_8
        assert chunk.refs == expected
        assert chunk.ordinal == Ref.from_id(expected[0]).ordinal
    # Passages cited in passing are metadata, not what the chunk comments on.
    mercy_seat = starting(chunks, "The noun ἱλαστήριον")
    assert mercy_seat.metadata["cited_refs"] == ["lev_16_14", "lev_16_15", "heb_9_5"]


def test_split_lands_at_the_greek_paragraph(chunks):
    greek = starting(chunks, "The key phrase δικαιοσύνη θεοῦ")
    assert greek.metadata["register"] == "grammar"
    assert greek.text.startswith("[Helen M. Carrow, Notes on Romans | Romans 3:21-26 | grammar]\n")
    before = previous(chunks, greek)
    assert before.metadata["register"] == "exposition"
    assert body(before).endswith("contested by interpreters.")


def test_split_lands_at_the_qumran_sentence_inside_a_paragraph(chunks):
    qumran = starting(chunks, "At Qumran a striking parallel appears")
    assert qumran.metadata["register"] == "background"
    assert "Josephus" in body(qumran) and "4 Maccabees" in body(qumran)
    before = previous(chunks, qumran)
    # The same source paragraph, cut between two sentences where the register changes.
    assert before.metadata["register"] == "exposition"
    assert body(before).startswith("Whatever the precise image")
    assert body(before).endswith("rather than compromised.")


def test_each_register_of_each_passage_is_its_own_chunk(chunks):
    def registers(passage):
        return [c.metadata["register"] for c in chunks if c.metadata["passage"] == passage]

    assert registers("Romans 3:21-26") == ["exposition", "grammar", "grammar", "exposition", "background", "application"]
    assert registers("Romans 8:28-30") == ["exposition", "grammar", "background", "application"]
    application = starting(chunks, "For the church today")
    assert application.text.startswith("[Helen M. Carrow, Notes on Romans | Romans 3:21-26 | application]\n")


def test_a_short_closing_remark_stays_with_its_paragraph(chunks):
    # "Whether Paul presents Christ as the mercy seat … remains debated" has no Greek, but it
    # closes the paragraph on ἱλαστήριον, so it is not cut off into the next discussion.
    mercy_seat = starting(chunks, "The noun ἱλαστήριον")
    assert body(mercy_seat).endswith("means of atonement remains debated.")
    gravesides = starting(chunks, "Few verses are quoted more often")
    assert gravesides.metadata["register"] == "application"


def test_sizes_ids_acl_and_nothing_dropped(chunks):
    assert count_tokens([c.text for c in chunks]) == [c.tokens for c in chunks]
    assert max(c.tokens for c in chunks) <= MAX_TEXT_TOKENS
    assert min(count_tokens([body(c) for c in chunks])) >= modern.MIN_GROUP_TOKENS
    ids = [c.chunk_id for c in chunks]
    assert len(set(ids)) == len(ids) and ids[0] == "carrow-romans/rom_3_21_26_01"
    assert [c.chunk_id for c in run(load_source(SOURCES, "carrow-romans"))] == ids
    for chunk in chunks:
        assert chunk.kind == "modern" and chunk.acl == ("public",) and chunk.ruleset == modern.RULESET
        assert chunk.granularity == "register" and chunk.header is None
        assert chunk.breadcrumb == f"Notes on Romans › {chunk.metadata['passage']}"
    source = load_source(SOURCES, "carrow-romans")
    commentary = modern.parse(source, modern.read(source, None))
    words_in = " ".join(p.text for passage in commentary.passages for p in passage.paragraphs).split()
    assert " ".join(body(c) for c in chunks).split() == words_in


# ---------------------------------------------------------------- small groups, long groups


def test_a_fragment_is_merged_into_a_neighbour(tmp_path):
    text = (
        "## Philippians 2:5-11\n\n"
        "Paul sets before the Philippians the pattern of the one who did not cling to his rank. "
        "The hymn moves from humiliation to exaltation, and its shape governs the whole letter. "
        "The readers are to have this mind among themselves.\n\n"
        "The word is μορφή.\n\n"
        "The exaltation answers the humiliation, and every knee bows to the name given to him. "
        "The confession that Jesus is Lord is made to the glory of the Father, not in rivalry.\n"
    )
    chunks = run(scratch(tmp_path, text))
    assert all(c.refs == tuple(f"phil_2_{v}" for v in range(5, 12)) for c in chunks)
    (holder,) = [c for c in chunks if "μορφή" in c.text]
    assert body(holder) != "The word is μορφή."
    assert "grammar" in holder.metadata["registers"]
    assert min(count_tokens([body(c) for c in chunks])) >= modern.MIN_GROUP_TOKENS


def test_a_long_register_group_is_cut_to_fit(tmp_path):
    sentence = "Paul returns to the theme of hope, and each clause adds to what the one before it said. "
    text = "## Romans 5:1-5: Peace with God\n\n" + "\n\n".join(sentence * 6 for _ in range(4)) + "\n"
    chunks = run(scratch(tmp_path, text))
    assert len(chunks) >= 2
    assert all(c.tokens <= MAX_TEXT_TOKENS for c in chunks)
    sizes = [c.tokens for c in chunks]
    assert min(sizes) > 0.6 * max(sizes)  # even pieces, no scrap
    assert chunks[0].text.startswith("[A. Scholar, Commentary | Romans 5:1-5 — Peace with God | exposition]\n")
    assert chunks[0].metadata["passage_title"] == "Peace with God"
    assert all(c.acl == ("user:alice",) for c in chunks)


def test_plain_text_passage_lines_and_an_introduction(tmp_path):
    text = (
        "This commentary reads the letter as a whole.\n\n"
        "Rom 8:28–30\n\n"
        "Paul gathers up the chapter in a chain of five verbs.\n"
    )
    intro, passage = run(scratch(tmp_path, text, fmt="text"))
    assert intro.metadata["passage"] == "Introduction" and intro.refs == () and intro.ordinal is None
    assert passage.metadata["passage"] == "Romans 8:28-30" and passage.refs == ROMANS_8
    assert passage.chunk_id == "scratch/rom_8_28_30_01"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("## Romans 17:1\n\nNo such chapter.\n", "names no real passage"),
        ("## Romans 3:21\n\nOne.\n\n## Rom 3:21\n\nTwice.\n", "commented on twice"),
        ("## Romans 3:21\n\n", "no paragraphs"),
    ],
)
def test_bad_input_is_a_source_error(tmp_path, text, problem):
    with pytest.raises(SourceError, match=problem) as caught:
        run(scratch(tmp_path, text))
    assert caught.value.source_id == "scratch"
