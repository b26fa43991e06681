"""Splitting prose to the model's limit, at paragraph then sentence boundaries."""

from lectio.embedding.model import count_tokens
from lectio.rulesets.textsplit import sentences, split_to_fit, with_trailing_overlap


def test_sentences_survive_theological_abbreviations():
    text = "Paul cites Rom. 8:28 here. See cf. v. 3 for more. 4 Ezra agrees. ἱλαστήριον is the word."
    assert sentences(text) == ["Paul cites Rom. 8:28 here.", "See cf. v. 3 for more.", "4 Ezra agrees.", "ἱλαστήριον is the word."]


def test_split_to_fit_keeps_paragraphs_whole_when_they_fit():
    paragraphs = [("Grace abounds where sin abounded. " * 8).strip() for _ in range(4)]
    pieces = split_to_fit("\n\n".join(paragraphs), 150)
    assert all(n <= 150 for n in count_tokens(pieces))
    assert all(p in paragraphs or all(q in paragraphs for q in p.split("\n\n")) for p in pieces)


def test_a_paragraph_too_long_splits_between_sentences():
    paragraph = " ".join(f"Sentence number {i} speaks of mercy." for i in range(60))
    pieces = split_to_fit(paragraph, 100)
    assert len(pieces) > 1 and all(n <= 100 for n in count_tokens(pieces))
    assert all(p.endswith("mercy.") for p in pieces)
    assert " ".join(pieces) == paragraph


def test_trailing_overlap_repeats_the_last_sentence():
    assert with_trailing_overlap(["One. Two.", "Three. Four."]) == ["One. Two.", "Two. Three. Four."]


def test_an_opening_quote_stays_with_its_sentence():
    text = 'He said, "Go in peace." "Thou art the man," said Nathan.'
    assert sentences(text) == ['He said, "Go in peace."', '"Thou art the man," said Nathan.']
