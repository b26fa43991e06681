"""The sources file: one bad entry fails only itself, with an error naming it and the problem."""

from pathlib import Path

import pytest
import yaml

from lectio.rulesets import documents
from lectio.sources import (PRINCIPAL, PrincipalError, Source, SourceError, check_principals, load_source,
                            load_sources, read_entries, source_ids)


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
        ("{id: x, kind: document, format: [pdf], path: a.txt, acl: [public]}", "needs a 'format'"),
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


# ---------------------------------------------------------------- strings that cannot be stored

OK_ENTRY = "{id: ok, kind: document, format: text, path: b.txt, acl: [public]}"


@pytest.mark.parametrize(
    "entry, field, problem",
    [
        (r'{id: x, kind: document, format: text, path: a.txt, acl: [public], title: "Bad\0title"}', "'title'", "NUL"),
        (r'{id: x, kind: document, format: text, path: a.txt, acl: [public], author: "A\0B"}', "'author'", "NUL"),
        (r'{id: x, kind: document, format: text, path: "a\0.txt", acl: [public]}', "'path'", "NUL"),
        (r'{id: x, kind: scripture, format: sword-bible, module: m, select: "Romans\0 8", acl: [public]}', "'select'", "NUL"),
        (r'{id: x, kind: scripture, format: sword-bible, module: "m\0", acl: [public]}', "'module'", "NUL"),
        (r'{id: x, kind: document, format: text, path: a.txt, acl: ["user:\0bob"]}', "'acl[0]'", "NUL"),
        (r'{id: x, kind: scripture, format: sword-bible, module: m, rules: {k: "a\0"}, acl: [public]}', "'rules.k'", "NUL"),
        (r'{id: x, kind: scripture, format: sword-bible, module: m, rules: {"a\0": 1}, acl: [public]}', "'rules.a\\x00 (the key)'", "NUL"),
        (r'{id: x, kind: document, format: text, path: "a\tb.txt", acl: [public]}', "'path'", "control character (U+0009)"),
        (r'{id: x, kind: document, format: text, path: a.txt, acl: [public], title: "\udc80 lone"}', "'title'", "lone surrogate (U+DC80)"),
    ],
)
def test_a_string_that_cannot_be_stored_fails_its_source_naming_the_field(tmp_path, entry, field, problem):
    path = write(tmp_path, f"sources:\n  - {entry}\n  - {OK_ENTRY}\n")
    with pytest.raises(SourceError) as error:
        load_source(path, "x")
    message = str(error.value)
    assert message.startswith("source 'x': ") and field in message and problem in message, message
    assert "\n" not in message and "\0" not in message  # one printable line
    assert load_source(path, "ok").acl == ("public",)


def test_free_text_keeps_tabs_and_line_breaks_but_no_other_control_character(tmp_path):
    entry = "{{id: {sid}, kind: document, format: text, path: a.txt, acl: [public], title: {title}}}"
    path = write(tmp_path, "sources:\n  - " + entry.format(sid="kept", title=r'"Two\nlines\tand a tab"')
                 + "\n  - " + entry.format(sid="bell", title=r'"Bell\a"') + "\n")
    assert load_source(path, "kept").title == "Two\nlines\tand a tab"
    with pytest.raises(SourceError, match=r"'title' holds a control character \(U\+0007\)"):
        load_source(path, "bell")


@pytest.mark.parametrize("bad_id", [r"a\0b", r"a\nb", "a...b"])
def test_an_id_that_cannot_name_a_partition_fails_only_its_own_source(tmp_path, bad_id):
    path = write(tmp_path, f'sources:\n  - {{id: "{bad_id}", kind: document, format: text, path: a.txt, acl: [public]}}\n'
                           f"  - {OK_ENTRY}\n")
    # The bad entry goes by its position, so the ids of the file stay usable as partition keys.
    assert source_ids(path) == ["source-1", "ok"]
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source)
    error = loaded["source-1"]
    assert isinstance(error, SourceError) and "'id'" in str(error)
    assert repr(yaml.safe_load(f'"{bad_id}"')) in str(error)


# ---------------------------------------------------------------- principals


@pytest.mark.parametrize("principal", ["user:bob\n", "public\n"])
def test_a_principal_with_a_trailing_newline_is_refused(principal):
    # Python's `$` matches before a final newline and PostgreSQL's does not: refused here, not later in SQL.
    with pytest.raises(PrincipalError):
        check_principals([principal])
    # lectio.index.security embeds the pattern text in a PostgreSQL regex, where `^…$` anchors.
    assert PRINCIPAL.pattern.startswith("^") and PRINCIPAL.pattern.endswith("$")
    assert check_principals(["public", "user:bob", "group:staff"]) == ("public", "user:bob", "group:staff")


# ---------------------------------------------------------------- the sources file as a whole


@pytest.mark.parametrize("text", ["sources: []\n", "sources:\n", "[]\n", ""])
def test_a_file_with_no_sources_says_so_in_one_line(tmp_path, text):
    path = write(tmp_path, text)
    for read in (read_entries, source_ids, load_sources):
        with pytest.raises(SourceError) as error:
            read(path)
        assert str(error.value) == f"sources file {path} lists no sources"


def test_a_directory_as_path_says_it_is_a_directory(tmp_path):
    (tmp_path / "folder").mkdir()
    with pytest.raises(SourceError, match="is a directory, not a file") as error:
        documents.read(text_source(tmp_path, "folder"))
    assert "source 'doc'" in str(error.value) and "does not exist" not in str(error.value)


# ---------------------------------------------------------------- paths outside the sources folder


def path_source(folder: Path, path: str, corpus: Path, extra: str = "") -> Source | SourceError:
    sources = write(folder, f"sources:\n  - {{id: doc, kind: document, format: text, path: '{path}', acl: [public]{extra}}}\n")
    return load_sources(sources, corpus_dir=corpus)["doc"]


@pytest.fixture()
def folders(tmp_path):
    inside, corpus, elsewhere = (tmp_path / name for name in ("sources", "corpus", "elsewhere"))
    for folder in (inside, corpus, elsewhere):
        folder.mkdir()
        (folder / "doc.txt").write_text("Hello.")
    (inside / "passwd").symlink_to("/etc/passwd")
    (inside / "linked").symlink_to(elsewhere, target_is_directory=True)
    return inside, corpus, elsewhere


@pytest.mark.parametrize("path", ["../elsewhere/doc.txt", "/etc/hostname", "passwd", "linked/doc.txt"])
def test_a_path_outside_the_sources_folder_and_the_corpus_is_refused(folders, path):
    inside, corpus, _ = folders
    error = path_source(inside, path, corpus)
    assert isinstance(error, SourceError), error
    assert "outside the sources file's folder" in str(error) and "allow_outside: true" in str(error)
    assert isinstance(path_source(inside, path, corpus, ", allow_outside: true"), Source)
    # The sources file's folder and the corpus stay open, however the path reaches them.
    assert path_source(inside, "doc.txt", corpus).path == inside / "doc.txt"
    assert path_source(inside, "../corpus/doc.txt", corpus).path == corpus / "doc.txt"
    assert path_source(inside, str(corpus / "doc.txt"), corpus).path == corpus / "doc.txt"


def test_the_corpus_defaults_to_the_settings_one(folders, monkeypatch):
    inside, corpus, _ = folders
    monkeypatch.setenv("LECTIO_CORPUS_DIR", str(corpus))
    entry = "{{id: {sid}, kind: document, format: text, path: ../{folder}/doc.txt, acl: [public]}}"
    sources = write(inside, "sources:\n  - " + entry.format(sid="corpus", folder="corpus")
                    + "\n  - " + entry.format(sid="elsewhere", folder="elsewhere") + "\n")
    assert load_source(sources, "corpus").path == corpus / "doc.txt"
    with pytest.raises(SourceError, match="outside the sources file's folder"):
        load_source(sources, "elsewhere")


def test_allow_outside_must_be_a_boolean(folders):
    inside, corpus, _ = folders
    error = path_source(inside, "doc.txt", corpus, ", allow_outside: 'yes'")
    assert isinstance(error, SourceError) and "'allow_outside' must be true or false" in str(error)


# ---------------------------------------------------------------- ids that cannot name a folder


@pytest.mark.parametrize("bad_id", ["x/a", "x\\a", "..", "a..b", ".hidden", "a b", " a", "-a", "x:a", "caf\u00e9"])
def test_an_id_unsafe_as_a_folder_name_fails_only_its_own_source(tmp_path, bad_id):
    # `x/a` beside `x` made a storage folder inside x's and failed every index build.
    entry = "{{id: '{sid}', kind: document, format: text, path: a.txt, acl: [public]}}"
    path = write(tmp_path, "sources:\n  - " + entry.format(sid=bad_id) + "\n  - " + entry.format(sid="x") + "\n")
    assert source_ids(path) == ["source-1", "x"]
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["x"], Source)
    message = str(loaded["source-1"])
    assert message.startswith(f"source 'source-1': 'id' {bad_id!r} ") and "folder" in message, message
    assert "\n" not in message


def test_an_entry_renamed_for_its_bad_id_never_takes_a_real_sources_id(tmp_path):
    """An entry with a bad id goes by its position, `source-1`; where a real source already has
    that id, the whole file was refused as naming one id twice, blaming the valid entry."""
    entry = "{{id: '{sid}', kind: document, format: text, path: a.txt, acl: [public]}}"
    ids = ["x/a", "source-1", "source-1-2", "../b", "source-4"]
    path = write(tmp_path, "sources:\n" + "".join(f"  - {entry.format(sid=sid)}\n" for sid in ids))
    assert source_ids(path) == ["source-1-3", "source-1", "source-1-2", "source-4-2", "source-4"]
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert all(isinstance(loaded[sid], Source) for sid in ("source-1", "source-1-2", "source-4"))
    assert str(loaded["source-1-3"]).startswith("source 'source-1-3': 'id' 'x/a' ")
    assert str(loaded["source-4-2"]).startswith("source 'source-4-2': 'id' '../b' ")


@pytest.mark.parametrize("good_id", ["kjv", "notes-alice", "westminster-confession", "y_a", "a.b", "3", "KJV1611"])
def test_ids_of_letters_digits_dots_dashes_and_underscores_are_kept(tmp_path, good_id):
    path = write(tmp_path, f"sources:\n  - {{id: '{good_id}', kind: document, format: text, path: a.txt, acl: [public]}}\n")
    assert isinstance(load_sources(path, corpus_dir=tmp_path)[good_id], Source)


def test_the_ids_of_the_shipped_and_fixture_sources_files_stay_valid():
    root = Path(__file__).resolve().parents[2]
    for sources_file in [root / "data" / "sources.yaml", *sorted((root / "tests" / "fixtures").glob("*.yaml"))]:
        entries = read_entries(sources_file) if "sources" in sources_file.read_text() else []
        assert not [e["_bad_id"] for e in entries if "_bad_id" in e], sources_file


# ---------------------------------------------------------------- a file that cannot be read


@pytest.mark.parametrize("char, shown", [("\0", "#x0000"), ("\x01", "#x0001")])
def test_a_raw_control_character_in_the_file_names_its_line(tmp_path, char, shown):
    path = tmp_path / "sources.yaml"
    path.write_text(f"sources:\n  - {OK_ENTRY}\n  - {{id: b{char}c, kind: document}}\n")
    with pytest.raises(SourceError) as error:
        read_entries(path)
    message = str(error.value)
    assert message.startswith(f"sources file {path} ") and shown in message and "line 3, column 11" in message, message
    assert "\n" not in message and "\0" not in message


def test_a_directory_as_the_sources_file_says_so_in_one_line(tmp_path):
    for read in (read_entries, source_ids, load_sources):
        with pytest.raises(SourceError) as error:
            read(tmp_path)
        assert str(error.value) == f"sources file {tmp_path} is a directory, not a file"


def test_an_unreadable_sources_file_says_so_in_one_line(tmp_path, monkeypatch):
    path = write(tmp_path, f"sources:\n  - {OK_ENTRY}\n")

    def refused(self, *args, **kwargs):  # as chmod 000 does, even when the tests run as root
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", refused)
    with pytest.raises(SourceError) as error:
        read_entries(path)
    assert str(error.value) == f"sources file {path} cannot be read: permission denied"


@pytest.mark.parametrize("entry, problem, field", [
    ("{id: x, kind: document, format: pdf, path: a.txt, acl: [public]}", "unknown format 'pdf'; expected one of ",
     "format"),
    ("{id: x, kind: document, format: markdown, path: a.txt, acl: [public], rules: {a: 1}}",
     "format 'markdown' has no tunable rules; 'rules' applies to sword-bible", "rules"),
])
def test_the_formats_say_which_exist_and_which_take_rules(tmp_path, entry, problem, field):
    """One list of formats, the registry's, and each format's ruleset says whether it takes rules."""
    from lectio.rulesets import registry

    path = write(tmp_path, f"sources:\n  - {entry}\n")
    with pytest.raises(SourceError, match=problem) as refused:
        registry.format_of(load_source(path, "x"))
    assert refused.value.field == field
    assert set(registry.FORMAT_NAMES) == {name for name, _ in registry.FORMATS}
