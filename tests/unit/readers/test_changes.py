"""A source's input fingerprint names its inputs, not how a process spelled the way to them."""

from __future__ import annotations

import pytest

from lectio.readers.changes import fetch_missing_modules
from lectio.rulesets.registry import input_fingerprints


@pytest.mark.network
def test_a_sword_sources_fingerprint_is_the_same_however_the_corpus_folder_is_spelled(settings, tmp_path,
                                                                                     monkeypatch):
    """Issue 62, item 9: the UI's runs take the corpus folder as LECTIO_CORPUS_DIR spells it and
    `lectio run` resolves it; the SWORD sources' prints differed, so `lectio run` read them again."""
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - {id: kjv, kind: scripture, format: sword-bible, module: engKJV2006eb,\n"
                       "     select: Philemon, acl: [public]}\n")
    fetch_missing_modules(sources, settings.corpus_dir)
    monkeypatch.chdir(settings.corpus_dir.parent)
    spelled = input_fingerprints(sources, settings.corpus_dir.relative_to(settings.corpus_dir.parent), "a model")
    assert spelled == input_fingerprints(sources, settings.corpus_dir, "a model") and spelled["kjv"]
