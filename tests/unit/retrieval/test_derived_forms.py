"""Derivations the English stemmer keeps apart meet in BM25: "justification" stems to justif and
"justified" to justifi, so a reader's noun finds the verses' verb only through its other form."""

from lectio.retrieval.expansion import derived_forms


def test_a_noun_reaches_the_verb_the_verses_print_and_back():
    assert derived_forms("What is justification?") == ["justify"]
    assert derived_forms("sanctify") == ["sanctification"]
    assert derived_forms("belief in God") == ["believe"]


def test_only_forms_a_translation_prints_are_added_and_nothing_twice():
    # "believe" -> "belief": neither the WEB nor the KJV prints "belief".
    assert derived_forms("believe") == []
    assert derived_forms("justification and justify") == []
    assert derived_forms("the law of God") == []
