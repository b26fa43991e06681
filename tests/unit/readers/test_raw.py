"""Reading a text file: what cannot be indexed is refused at read time, for that source alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from lectio.readers.raw import MAX_FILE_BYTES, read_text_file
from lectio.rulesets.textsplit import sentences
from lectio.sources import Source, SourceError


def source(path: Path) -> Source:
    return Source(id="doc", kind="document", format="text", acl=("public",), path=path, module=None,
                  select=None, chunking=None, rules={}, metadata={})


def test_a_file_over_the_size_limit_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.txt"
    with path.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(SourceError, match=r"source 'doc': file .*huge.txt is 16.0 MiB, over the 16 MiB"):
        read_text_file(source(path))


def test_a_nul_byte_is_refused_with_its_line(tmp_path):
    path = tmp_path / "nul.txt"
    path.write_text("one\ntwo\nth\x00ree\n")
    with pytest.raises(SourceError, match="line 3: holds a NUL byte"):
        read_text_file(source(path))


def test_a_single_line_past_a_million_characters_still_splits_into_sentences():
    """spaCy refuses texts over its default max_length (E088); a one-line 2 MB file is such a text."""
    text = "The hall opens at nine. " * 45_000
    assert len(text) > 1_000_000
    assert len(sentences(text)) == 45_000
