"""Scripture that cannot be read as asked fails its source in one line that says why, checked
without a module (the ruleset on the real modules: tests/integration/pipeline/test_scripture.py)."""

import dataclasses
import re
from pathlib import Path

import pytest

from lectio.rulesets import scripture
from lectio.readers.raw import RawText
from lectio.readers.sword_bible import RawVerse
from lectio.sources import Source, SourceError


def bible(select: str) -> Source:
    return Source(id="web", kind="scripture", format="sword-bible", acl=("public", "group:staff"),
                  module="engWEB2015eb", select=select, metadata={"translation": "WEB", "title": "Test Bible"})


def test_an_overlong_verse_fails_the_source():
    raw = RawText("web", "x", [RawVerse("Rev", 22, 21, "word " * 400)], units=1)
    with pytest.raises(SourceError, match="Revelation 22:21 is 1999 characters"):
        scripture.parse(bible("Revelation 22"), raw)


def test_a_missing_module_is_a_source_error(tmp_path):
    source = Source(id="lost", kind="scripture", format="sword-bible", acl=("public",), module="nosuchmodule")
    with pytest.raises(SourceError, match="source 'lost'"):
        scripture.read(source, Path(tmp_path))


@pytest.mark.parametrize("code", ["28_WEB", "web_para", "1984", "nasb 1995"])
def test_a_translation_code_that_could_make_another_codes_ids_fails_the_source(code):
    # With code "28_web", Romans 8:28's verse id would be rom_8_28_28_web: the id of the
    # one-verse pericope of a source whose code is "web".
    source = dataclasses.replace(bible("Romans 8"), metadata={"translation": code})
    raw = RawText("web", "x", [RawVerse("Rom", 8, 28, "And we know that all things work together for good.")], units=1)
    structure = scripture.parse(source, raw)
    problem = f"source 'web': translation {code!r} cannot end chunk ids"
    with pytest.raises(SourceError, match=re.escape(problem)):
        scripture.chunk(source, structure)


def test_a_translation_code_is_the_translation_else_the_id_in_lower_case():
    assert scripture.translation_code(bible("Romans 8")) == "web"
    untitled = dataclasses.replace(bible("Romans 8"), id="web-2015.1", metadata={})
    assert scripture.translation_code(untitled) == "web-2015.1"
