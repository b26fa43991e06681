"""Query expansion built from the translations' own renderings: the generator on the real WEB
and KJV modules, the checked-in table it made, and the expansions drawn from it."""

from pathlib import Path

import pytest

from lectio.readers.corpus import ensure_sword_module
from lectio.readers.renderings import count_renderings, tagged_words, write_table
from lectio.retrieval.expansion import RENDERINGS, Renderings, expansions

pytestmark = pytest.mark.network

KJV_PS_136_1 = ('O give <w lemma="strong:H3034">thanks</w> unto the <divineName><w lemma="strong:H3068">LORD</w>'
                '</divineName>; for <transChange type="added">he is</transChange> <w lemma="strong:H2896">good</w>: '
                'for his <w lemma="strong:H2617">mercy</w> <transChange type="added">endureth</transChange> for '
                '<w lemma="strong:H5769">ever</w>.')
WEB_PS_136_1 = ('<w lemma="strong:H3034">Give</w> <w lemma="strong:H3034">thanks</w> <w lemma="strong:H3068">to</w> '
                '<w lemma="strong:H3068">Yahweh</w>, <w lemma="strong:H3588">for</w> <w lemma="strong:H3588">he</w> '
                '<w lemma="strong:H3068">is</w> <w lemma="strong:H2896">good</w>, for his loving '
                '<w lemma="strong:H2617">kindness</w> <w lemma="strong:H5769">endures</w> forever.')


def test_tagged_words_keep_content_words_with_their_numbers():
    assert ("mercy", "H2617") in set(tagged_words(KJV_PS_136_1))
    assert ("lord", "H3068") in set(tagged_words(KJV_PS_136_1))  # inside <divineName>, lower-cased
    web = list(tagged_words(WEB_PS_136_1))
    assert ("yahweh", "H3068") in web and ("kindness", "H2617") in web
    # A tag spanning a function word ("to Yahweh") makes no rendering of it; untagged words none.
    assert not {word for word, _ in web} & {"to", "is", "for", "he", "loving", "forever"}


@pytest.fixture(scope="module")
def library(settings):
    library = None
    for module in ("engWEB2015eb", "engKJV2006eb"):
        library = ensure_sword_module(settings.corpus_dir, module)
    return library


def test_counts_come_from_both_translations(library, tmp_path):
    counts = count_renderings(library, select=lambda book, chapter: book == "Ps" and chapter == 136)
    # Every verse of Psalm 136 ends "his loving kindness / mercy endures forever".
    assert counts["WEB"][("kindness", "H2617")] == 26
    assert counts["KJV"][("mercy", "H2617")] == 26
    written = write_table(counts, tmp_path / "renderings.tsv")
    renderings = Renderings(tmp_path / "renderings.tsv")
    assert written == sum(len(words) for words in renderings.by_word.values())
    assert renderings.by_number["H2617"] == {"kindness": 26, "mercy": 26}
    assert "kindness" in renderings.synonyms("mercy", min_count=5, min_share=0.1, max_terms=3)


def test_the_checked_in_table_is_what_the_generator_makes(library, tmp_path):
    write_table(count_renderings(library), tmp_path / "renderings.tsv")
    assert (tmp_path / "renderings.tsv").read_text(encoding="utf-8") == RENDERINGS.read_text(encoding="utf-8")


def test_expansions_are_the_words_scripture_uses_for_the_same_word():
    assert "yahweh" in expansions("hope in the Lord")  # the WEB's rendering of the divine name
    assert "kindness" in expansions("mercy")  # H2617: the KJV's mercy, the WEB's loving kindness
    assert "mercy" in expansions("kindness")
    assert "wrath" in expansions("the anger of God")
    assert "mercy" not in expansions("mercy and kindness")  # never what the query already says
    assert expansions("Nicodemus") == []  # a name renders one word only: no synonym
    assert expansions("what is it about") == []  # function words are never expanded


def test_limits_bound_what_is_added():
    loose = expansions("mercy", min_count=1, min_share=0.01, max_terms=10)
    assert len(loose) > 3
    assert len(expansions("mercy", min_count=1, min_share=0.01, max_terms=2)) == 2
    assert expansions("mercy", min_share=0.99) == []


def test_a_malformed_table_names_the_file_and_line(tmp_path: Path):
    bad = tmp_path / "renderings.tsv"
    bad.write_text("# header\nmercy\tH2617\tmany\t1\n")
    with pytest.raises(ValueError, match=r"renderings.tsv:2"):
        Renderings(bad)
