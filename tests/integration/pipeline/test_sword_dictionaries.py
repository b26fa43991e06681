"""read_zld on the real Strong's and Nave's modules (downloaded on first use)."""

import pytest

from lectio.readers.corpus import ensure_sword_module
from lectio.evaluation.naves import ensure_naves
from lectio.readers.zld import ZldError, read_zld

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def strongs(settings):
    ensure_sword_module(settings.corpus_dir, "strongsgreek")
    return ensure_sword_module(settings.corpus_dir, "strongshebrew")


@pytest.fixture(scope="module")
def naves(settings):
    return ensure_naves(settings.corpus_dir)


def test_strongs_greek_has_agape_at_g26(strongs):
    entries = list(read_zld(strongs, "StrongsGreek"))
    keys = [key for key, _ in entries]
    assert len(entries) == 5624
    assert keys == sorted(set(keys))  # one entry per number, in number order
    agape = dict(entries)["00026"]
    assert "agápē" in agape
    assert "love" in agape
    assert "G25" in agape  # derived from agapaō


def test_module_name_is_case_insensitive(strongs):
    assert next(read_zld(strongs, "strongsgreek")) == next(read_zld(strongs, "StrongsGreek"))


def test_strongs_hebrew_has_chesed_at_h2617(strongs):
    chesed = dict(read_zld(strongs, "StrongsHebrew"))["02617"]
    assert "חסד" in chesed
    assert "kindness" in chesed


def test_naves_has_its_5320_topics(naves):
    entries = list(read_zld(naves, "Nave"))
    topics = {key for key, _ in entries}
    assert len(topics) == 5320
    # Two keys are stored twice (SIN is both the desert and the sin); both entries come out.
    assert [key for key, _ in entries].count("SIN") == 2
    forgiveness = dict(entries)["FORGIVENESS"]
    assert 'osisRef="Matt.18.21-Matt.18.35"' in forgiveness


def test_unknown_module_and_non_dictionary_are_refused(strongs, settings):
    with pytest.raises(ZldError, match="NoSuchLexicon.*not found"):
        next(read_zld(strongs, "NoSuchLexicon"))
    web = ensure_sword_module(settings.corpus_dir, "engWEB2015eb")
    with pytest.raises(ZldError, match="is not zLD"):
        next(read_zld(web, "engWEB2015eb"))
