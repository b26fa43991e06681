"""The embedding model from the installed package, and the guard against silent truncation."""

import numpy as np

from lectio.embedding.model import MAX_TEXT_TOKENS, Embedder, count_tokens, split_into_windows, tokenizer


def test_token_counts_are_not_truncated_by_the_shipped_tokenizer_settings():
    # tokenizer.json truncates at 128; a count must see the whole text.
    assert count_tokens(["grace " * 300]) == [300]


def test_long_texts_split_into_windows_the_model_can_take_whole():
    text = "Unsearchable riches of grace abound. " * 120
    windows = split_into_windows(text)
    assert len(windows) > 1
    assert all(n <= MAX_TEXT_TOKENS for n in count_tokens(windows))
    # No word is lost or cut at a window boundary.
    assert " ".join(windows).split() == text.split()


def test_short_texts_are_one_window():
    assert split_into_windows("Jesus wept.") == ["Jesus wept."]


def test_embeddings_are_unit_length_and_long_texts_are_not_truncated():
    embedder = Embedder()
    head = "The Lord is my shepherd; I shall lack nothing. " * 40
    tail = "Ships and sailors crossed the stormy sea to trade in distant harbours. " * 40
    vectors = embedder.encode(["Jesus wept.", head, head + tail])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Truncated at 256 word pieces, head+tail would embed like head alone; windows keep the tail.
    assert len(tokenizer().encode(head).ids) > MAX_TEXT_TOKENS
    assert float(vectors[1] @ vectors[2]) < 0.95
