"""Study notes: the size rules on a fixture of one user's notes, and bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lectio.rulesets import notes
from lectio.embedding.model import MAX_TEXT_TOKENS, count_tokens
from lectio.sources import Source, SourceError
from lectio.rulesets.textsplit import paragraphs

ALICE = Path(__file__).resolve().parents[2] / "fixtures" / "notes" / "alice.jsonl"


def notes_source(path: Path = ALICE, sid="notes-alice") -> Source:
    return Source(
        id=sid,
        kind="notes",
        format="notes-jsonl",
        acl=("user:alice",),
        path=path,
        metadata={"title": "Alice's study notes"},
    )


def run(source: Source):
    return notes.chunk(source, notes.parse(source, notes.read(source, None)))


@pytest.fixture(scope="module")
def alice():
    texts = {r["id"]: r["text"] for r in map(json.loads, ALICE.read_text().splitlines())}
    chunks = run(notes_source())
    by_note = {}
    for c in chunks:
        by_note.setdefault(c.metadata["note_id"], []).append(c)
    return texts, chunks, by_note


def size(text: str) -> int:
    return count_tokens([text])[0]


def test_every_note_is_chunked_private_to_its_user(alice):
    texts, chunks, by_note = alice
    assert set(by_note) == set(texts)  # count in = count out
    assert all(c.acl == ("user:alice",) and c.kind == "notes" and c.granularity == "note" for c in chunks)
    assert all(c.tokens <= MAX_TEXT_TOKENS and c.tokens == size(c.text) for c in chunks)
    assert [c.chunk_id for c in by_note["n5"]] == [f"notes-alice/n5/{n}" for n in range(1, len(by_note["n5"]) + 1)]
    assert [c.chunk_id for c in run(notes_source())] == [c.chunk_id for c in chunks]  # stable


def test_a_short_note_is_one_chunk_with_no_header_embedded(alice):
    texts, _, by_note = alice
    assert size(texts["n2"]) < 200
    [note] = by_note["n2"]
    assert note.text == texts["n2"]
    assert note.header == "Note on Romans 8:28" and "Romans 8:28" not in note.text
    assert note.refs == ("rom_8_28",) and note.ordinal == 45_008_028  # from the id form "rom_8_28"
    assert note.metadata["split"] == "whole"


def test_a_middling_note_of_several_paragraphs_splits_between_them(alice):
    texts, _, by_note = alice
    assert 200 <= size(texts["n3"]) <= 800 and len(paragraphs(texts["n3"])) == 3
    pieces = by_note["n3"]
    assert len(pieces) >= 2 and {p.metadata["split"] for p in pieces} == {"paragraphs"}
    for piece in pieces:  # whole paragraphs only
        assert set(paragraphs(piece.text)) <= set(paragraphs(texts["n3"]))
    assert "\n\n".join(p.text for p in pieces) == texts["n3"]
    # "Psalm 23" is a whole chapter: all six of its verses, with the range kept in metadata.
    assert pieces[0].refs == tuple(f"ps_23_{v}" for v in range(1, 7))
    assert pieces[0].metadata["ref_ranges"] == [["ps_23_1", "ps_23_999"]]


def test_a_middling_single_paragraph_stays_whole_unless_the_model_would_truncate_it(alice):
    texts, _, by_note = alice
    assert 200 <= size(texts["n4"]) <= MAX_TEXT_TOKENS and len(paragraphs(texts["n4"])) == 1
    assert [c.text for c in by_note["n4"]] == [texts["n4"]]
    assert by_note["n4"][0].refs == ("phil_4_6", "phil_4_7")
    # n6 is one paragraph past the model's window: "whole" would be cut, so it splits at sentences.
    assert MAX_TEXT_TOKENS < size(texts["n6"]) <= 800 and len(paragraphs(texts["n6"])) == 1
    pieces = by_note["n6"]
    assert len(pieces) == 2 and {p.metadata["split"] for p in pieces} == {"sentences"}
    assert " ".join(p.text for p in pieces) == texts["n6"] and pieces[0].text.endswith(".")


def test_a_1000_token_note_splits_at_paragraphs_with_overlap(alice):
    texts, _, by_note = alice
    assert 950 <= size(texts["n5"]) <= 1200
    pieces = [p.text for p in by_note["n5"]]
    assert len(pieces) >= 4 and {p.metadata["split"] for p in by_note["n5"]} == {"paragraphs+overlap"}
    note_paragraphs = paragraphs(texts["n5"])
    rebuilt = pieces[:1]
    for previous, piece in zip(pieces, pieces[1:]):
        overlap, rest = piece.split("\n\n", 1)
        assert previous.endswith(overlap), "the carried text is the end of the previous piece"
        assert 25 <= size(overlap) <= 50 and overlap[0].isupper(), "about 50 tokens, from a sentence start"
        assert overlap not in note_paragraphs and rest.split("\n\n")[0] in note_paragraphs
        rebuilt.append(rest)
    assert "\n\n".join(rebuilt) == texts["n5"]  # without the overlaps, the note exactly
    assert by_note["n5"][0].refs == ("rom_8_28", "rom_8_29", "rom_8_30")


def test_overlap_falls_back_to_words_when_the_last_sentence_is_long():
    sentence = " ".join(["word"] * 80) + "."
    tail = notes.trailing_tokens(f"Short one. {sentence}", 50)
    assert sentence.endswith(tail) and 40 <= size(tail) <= 50


def _write(tmp_path, lines) -> Path:
    path = tmp_path / "bob.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


GOOD = json.dumps({"id": "a", "ref": "John 3:16", "text": "Loved the world."})


@pytest.mark.parametrize(
    "bad_line, problem",
    [
        ('{"id": "b", "ref": "Romans 5:1", "text": "unclosed', r"line 4: not valid JSON"),
        (json.dumps({"id": "b", "ref": "Romans 5:1"}), r"line 4: note 'b' has no 'text'"),
        (
            json.dumps({"id": "b", "ref": "Hezekiah 3:4", "text": "x"}),
            r"line 4: note 'b': 'ref' 'Hezekiah 3:4' names no verse",
        ),
        (
            json.dumps({"id": "b", "ref": "Romans 17:1", "text": "x"}),
            r"line 4: note 'b': 'ref' 'Romans 17:1' names no verse",
        ),
        (json.dumps({"id": "a", "ref": "Romans 5:1", "text": "x"}), r"line 4: note id 'a' is already used on line 1"),
    ],
)
def test_a_bad_line_fails_the_source_with_its_line_number(tmp_path, bad_line, problem):
    # A blank line does not shift the numbering: the error names the line in the file.
    source = notes_source(_write(tmp_path, [GOOD, json.dumps({"id": "c", "text": "No ref."}), "", bad_line]), sid="bob")
    with pytest.raises(SourceError, match=rf"source 'bob': {problem}"):
        run(source)


def test_a_note_without_a_ref_is_kept(tmp_path):
    [chunk] = run(
        notes_source(_write(tmp_path, [json.dumps({"id": "c", "text": "No ref.", "tags": ["x"]})]), sid="bob")
    )
    assert chunk.refs == () and chunk.header == "Note" and chunk.metadata["tags"] == ["x"]
