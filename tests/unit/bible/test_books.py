from collections import Counter

import pytest

from lectio.bible.books import (
    BOOKS,
    book_by_id,
    book_by_number,
    book_by_osis,
    find_book,
    normalise_book_name,
)


def test_canon_has_66_books_39_old_27_new():
    assert len(BOOKS) == 66
    assert Counter(book.testament for book in BOOKS) == {"old": 39, "new": 27}
    assert [book.number for book in BOOKS] == list(range(1, 67))
    assert BOOKS[0].name == "Genesis" and BOOKS[38].name == "Malachi"
    assert BOOKS[39].name == "Matthew" and BOOKS[65].name == "Revelation"


def test_chapter_counts():
    assert sum(book.chapters for book in BOOKS) == 1189
    assert book_by_id("ps").chapters == 150
    assert book_by_id("rom").chapters == 16
    single = {book.id for book in BOOKS if book.chapters == 1}
    assert single == {"obad", "phlm", "2john", "3john", "jude"}


def test_ids_are_lower_case_osis_as_design_lists():
    for book in BOOKS:
        assert book.id == book.osis.lower()
    ids = {book.id for book in BOOKS}
    assert {"rom", "1pet", "ps", "song", "phlm", "3john", "gen", "1sam", "matt", "1thess"} <= ids
    assert book_by_osis("1Sam").name == "1 Samuel"
    assert book_by_osis("Song").name == "Song of Songs"
    assert book_by_osis("Phlm").name == "Philemon"


def test_genres():
    genre = {book.id: book.genre for book in BOOKS}
    assert genre["gen"] == genre["deut"] == "law"
    assert genre["josh"] == genre["esth"] == genre["acts"] == "history"
    assert genre["job"] == genre["prov"] == genre["eccl"] == "wisdom"
    assert genre["ps"] == genre["song"] == genre["lam"] == "poetry"
    assert genre["isa"] == genre["dan"] == genre["mal"] == "prophecy"
    assert {genre[b] for b in ("matt", "mark", "luke", "john")} == {"gospel"}
    assert genre["rom"] == genre["jude"] == "epistle"
    assert genre["rev"] == "apocalyptic"


def test_lookups_by_number_id_and_osis():
    for book in BOOKS:
        assert book_by_number(book.number) is book
        assert book_by_id(book.id) is book
        assert book_by_osis(book.osis) is book
        assert find_book(book.name) is book
        assert find_book(book.osis) is book


@pytest.mark.parametrize(
    "lookup, key", [(book_by_id, "xyz"), (book_by_osis, "rom"), (book_by_number, 67)]
)
def test_unknown_lookups_raise_key_error(lookup, key):
    with pytest.raises(KeyError):
        lookup(key)


@pytest.mark.parametrize(
    "text, book_id",
    [
        ("Romans", "rom"), ("rom.", "rom"), ("ROM", "rom"),
        ("jn", "john"), ("Jhn", "john"), ("John", "john"),
        ("ps", "ps"), ("Psa", "ps"), ("psalm", "ps"), ("Psalms", "ps"),
        ("song of solomon", "song"), ("Song of Songs", "song"),
        ("canticles", "song"), ("song", "song"),
        ("1 pet", "1pet"), ("1pet", "1pet"), ("1 Pet.", "1pet"), ("I Peter", "1pet"),
        ("first peter", "1pet"), ("1st Peter", "1pet"), ("II  Peter", "2pet"),
        ("1 jn", "1john"), ("III John", "3john"), ("third john", "3john"),
        ("phm", "phlm"), ("philem", "phlm"), ("Philemon", "phlm"),
        ("rev", "rev"), ("Revelation", "rev"), ("revelations", "rev"),
        ("Gen", "gen"), ("Exod", "exod"), ("Matt", "matt"), ("mt", "matt"),
        ("1 Thess", "1thess"), ("2 Kgs", "2kgs"), ("Obad", "obad"), ("Jude", "jude"),
    ],
)
def test_find_book_accepts_what_people_type(text, book_id):
    assert find_book(text).id == book_id


@pytest.mark.parametrize("text", ["grace", "Hezekiah", "", "John the Baptist", "4 John", "i"])
def test_find_book_returns_none_for_non_books(text):
    assert find_book(text) is None


def test_no_alias_names_two_books():
    owner = {}
    for book in BOOKS:
        assert book.aliases, book.id
        for alias in book.aliases:
            assert alias == alias.lower()
            key = normalise_book_name(alias)
            assert owner.setdefault(key, book.id) == book.id, alias
