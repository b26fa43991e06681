"""A word too long for the tokenizer (past its 100 characters it reads the whole word as one
[UNK]): counted as the word pieces the model really sees, and split to fit like any other text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lectio.embedding.model import MAX_TEXT_TOKENS, tokenizer
from lectio.rulesets import documents, notes
from lectio.rulesets.textsplit import break_overlong_words
from lectio.sources import Source

# No whitespace and no punctuation: one "word" to the tokenizer, whatever its length.
RUN = "".join("abcdefghij"[i % 10] for i in range(200_000))


def word_pieces(text: str) -> list[str]:
    return tokenizer().encode(text, add_special_tokens=False).tokens


def assert_split_within_the_cap(chunks, run: str, body=lambda text: text):
    assert len(chunks) > 1
    for chunk in chunks:
        pieces = word_pieces(chunk.text)
        assert chunk.tokens == len(pieces) <= MAX_TEXT_TOKENS, chunk.chunk_id
        assert "[UNK]" not in pieces, chunk.chunk_id  # the model sees the text, not one unknown word
    # Nothing of the run is lost: only spaces were added.
    assert run in "".join("".join(body(c.text).split()) for c in chunks)


def test_a_200000_character_line_of_a_note_is_split_within_the_cap(tmp_path: Path):
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"id": "n1", "text": RUN}) + "\n")
    source = Source(id="n", kind="notes", format="notes-jsonl", acl=("user:alice",), path=path)
    chunks = notes.chunk(source, notes.parse(source, notes.read(source)))
    assert_split_within_the_cap(chunks, RUN)
    assert chunks[0].metadata["note_tokens"] > 50_000  # the note's size is its word pieces, not 1


def test_an_unbroken_line_of_a_markdown_document_is_split_within_the_cap(tmp_path: Path):
    # Shorter than the note's run: a document's long prose is cut by topic, which embeds every piece.
    run = RUN[:3_000]
    path = tmp_path / "log.md"
    path.write_text(f"# Log\n\nThe checksum follows.\n\n{run}\n")
    source = Source(id="log", kind="document", format="markdown", acl=("public",), path=path)
    chunks = documents.chunk(source, documents.parse(source, documents.read(source)))
    # Each chunk opens with its breadcrumb line ("Log").
    assert_split_within_the_cap(chunks, run, body=lambda text: text.split("\n\n", 1)[1])


@pytest.mark.parametrize("text", ["Ordinary words, stay as they are.", "An emoji 😀 is unknown but short.",
                                  "https://example.org/a/b?c=d " * 20])
def test_text_without_overlong_words_is_left_alone(text):
    assert break_overlong_words(text) == text


def test_a_word_lengthened_by_lower_casing_is_cut_short_enough():
    # "İ" lower-cases to two characters: cut at the limit, a 100-character word would be 200.
    text = "İ" * 300
    broken = break_overlong_words(text)
    assert broken.replace(" ", "") == text and "[UNK]" not in word_pieces(broken)


# Each chunk opens with a line naming its work; a thesis's chunks each repeat the thesis.
@pytest.mark.parametrize("kind, module, metadata, opening, body_after", [
    ("patristic", "patristic", {"author": "Augustine"}, "Chapter 1\n\nThe words follow.", "\n"),
    ("modern", "modern", {"author": "A Commentator"}, "Chapter 1\n\nThe words follow.", "\n"),
    ("reformation", "theses", {}, "1. The words follow.\nProof:", "Proof:"),
])
def test_an_unbroken_line_of_every_plain_text_ruleset_is_split_within_the_cap(tmp_path: Path, kind, module, metadata,
                                                                             opening, body_after):
    from importlib import import_module

    ruleset = import_module(f"lectio.rulesets.{module}")
    run = RUN[:5_000]
    path = tmp_path / "work.txt"
    path.write_text(f"{opening}\n\n{run}\n")
    source = Source(id="w", kind=kind, format="text", acl=("public",), path=path, metadata=metadata)
    chunks = ruleset.chunk(source, ruleset.parse(source, ruleset.read(source)))
    assert_split_within_the_cap(chunks, run, body=lambda text: text.split(body_after, 1)[-1])
