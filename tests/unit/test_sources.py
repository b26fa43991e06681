"""The sources file: one bad entry fails only itself, with an error naming it and the problem."""

from pathlib import Path

import pytest

from lectio.rulesets import documents
from lectio.sources import SourceError, load_source, read_entries, source_ids


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(text)
    return path


def test_entries_without_id_get_a_positional_one(tmp_path):
    path = write(tmp_path, "sources:\n  - {kind: document, format: text, path: a.txt, acl: [public]}\n")
    assert source_ids(path) == ["source-1"]


@pytest.mark.parametrize(
    "entry, problem",
    [
        ("{id: x, kind: document, format: text, path: a.txt}", "has no 'acl'"),
        ("{id: x, kind: document, format: text, path: a.txt, acl: []}", "'acl' must be a non-empty list"),
        ("{id: x, kind: document, format: pdf, path: a.txt, acl: [public]}", "unknown format 'pdf'"),
        ("{id: x, kind: sermon, format: text, path: a.txt, acl: [public]}", "unknown kind 'sermon'"),
        ("{id: x, kind: document, format: text, acl: [public]}", "needs a 'path'"),
    ],
)
def test_invalid_entries_name_the_source_and_the_problem(tmp_path, entry, problem):
    path = write(tmp_path, f"sources:\n  - {entry}\n  - {{id: ok, kind: document, format: text, path: b.txt, acl: [public]}}\n")
    with pytest.raises(SourceError) as error:
        load_source(path, "x")
    assert error.value.source_id == "x"
    assert problem in str(error.value) and "'x'" in str(error.value)
    # The other source of the same file is still valid.
    assert load_source(path, "ok").acl == ("public",)


def test_duplicate_ids_are_refused(tmp_path):
    path = write(tmp_path, "sources:\n  - {id: a}\n  - {id: a}\n")
    with pytest.raises(SourceError, match="more than one source"):
        source_ids(path)


def test_a_file_that_is_not_a_list_is_refused(tmp_path):
    with pytest.raises(SourceError, match="must hold a list"):
        read_entries(write(tmp_path, "sources: 3\n"))


def text_source(tmp_path, name):
    path = write(tmp_path, f"sources:\n  - {{id: doc, kind: document, format: text, path: {name}, acl: [public]}}\n")
    return load_source(path, "doc")


@pytest.mark.parametrize(
    "content, problem",
    [(None, "does not exist"), (b"caf\xe9 au lait", "not valid UTF-8"), (b"  \n\n", "is empty")],
)
def test_unreadable_documents_fail_with_a_clear_error(tmp_path, content, problem):
    if content is not None:
        (tmp_path / "doc.txt").write_bytes(content)
    with pytest.raises(SourceError, match=problem) as error:
        documents.read(text_source(tmp_path, "doc.txt"))
    assert "source 'doc'" in str(error.value)


def test_relative_paths_resolve_against_the_sources_file(tmp_path):
    (tmp_path / "doc.txt").write_text("Hello.")
    assert text_source(tmp_path, "doc.txt").path == tmp_path / "doc.txt"
