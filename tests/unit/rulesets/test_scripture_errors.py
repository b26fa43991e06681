"""Scripture that cannot be read as asked fails its source in one line that says why, checked
without a module (the ruleset on the real modules: tests/integration/test_scripture.py)."""

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
