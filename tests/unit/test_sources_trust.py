"""The sources file decides who may see what, so what YAML would let through quietly is refused:
a key written twice (the last would win), anchors and aliases (a few hundred bytes can expand to
a billion items), a list where one value belongs. Each fails its own entry, or the file where it
belongs to no entry, in one line naming the place."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from lectio.rulesets import notes
from lectio.sources import MAX_BRACKETS, MAX_NESTING, Source, SourceError, load_source, load_sources, read_entries, source_ids

OK_ENTRY = "{id: ok, kind: document, format: text, path: b.txt, acl: [public]}"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sources.yaml"
    path.write_text(text)
    return path


def one_line(error: Exception) -> str:
    message = str(error)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def file_refusal(path: Path) -> str:
    """The one message every reader of the file gives, the same for each."""
    messages = set()
    for read in (read_entries, source_ids, load_sources):
        with pytest.raises(SourceError) as error:
            read(path)
        assert error.value.source_id == "*"
        messages.add(one_line(error.value))
    [message] = messages
    assert message.startswith(f"sources file {path}"), message
    return message


# ---------------------------------------------------------------- a key written twice


def test_an_acl_written_twice_fails_its_entry_alone(tmp_path):
    # The issue's example: private to alice, then public further down the same entry.
    path = write(tmp_path, "sources:\n"
                           f"  - {OK_ENTRY}\n"
                           "  - id: x\n"
                           "    acl: [user:alice]\n"
                           "    kind: document\n"
                           "    format: text\n"
                           "    path: a.txt\n"
                           "    acl: [public]\n")
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source) and loaded["ok"].acl == ("public",)
    error = loaded["x"]
    assert isinstance(error, SourceError), error
    message = one_line(error)
    assert message.startswith("source 'x': duplicate key 'acl' at line 8, column 5 (first at line 4, column 5)"), message
    # Which ACL was meant is unknowable: the entry states none, so nothing built from it stays served.
    assert error.acl is None
    with pytest.raises(SourceError, match="duplicate key 'acl'"):
        load_source(path, "x")


def test_another_key_written_twice_fails_its_entry_and_keeps_its_acl(tmp_path):
    entry = "  - {id: x, kind: document, format: text, path: a.txt, acl: [user:bob], title: A, title: B}"
    path = write(tmp_path, f"sources:\n{entry}\n  - {OK_ENTRY}\n")
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source)
    message = one_line(loaded["x"])
    # Both on one line: the columns tell them apart.
    first, second = entry.index("title: A") + 1, entry.index("title: B") + 1
    assert message.startswith(f"source 'x': duplicate key 'title' at line 2, column {second} "
                              f"(first at line 2, column {first})"), message
    assert loaded["x"].acl == ("user:bob",)


@pytest.mark.parametrize("entry, key", [
    ("{id: x, kind: scripture, format: sword-bible, module: m, acl: [public], rules: {k: 1, k: 2}}", "'k'"),
    ("{id: x, id: y, kind: document, format: text, path: a.txt, acl: [public]}", "'id'"),
    ("{id: x, kind: document, format: text, path: a.txt, acl: [public], 1: a, 1.0: b}", "1.0"),
])
def test_a_key_written_twice_anywhere_in_an_entry_fails_that_entry(tmp_path, entry, key):
    path = write(tmp_path, f"sources:\n  - {entry}\n  - {OK_ENTRY}\n")
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source)
    # An id written twice names no id: the entry goes by its position, and the message by its line.
    [failed] = [v for k, v in loaded.items() if k != "ok"]
    assert isinstance(failed, SourceError)
    assert f"duplicate key {key} at line 2" in one_line(failed)


@pytest.mark.parametrize("text, line", [
    ("sources:\n  - {id: a}\nsources:\n  - {id: b}\n", "duplicate key 'sources' at line 3, column 1 (first at line 1, column 1)"),
    (f"sources:\n  - {OK_ENTRY}\nowner: alice\nowner: bob\n", "duplicate key 'owner' at line 4, column 1 (first at line 3, column 1)"),
    (f"sources:\n  - {OK_ENTRY}\nnotes: {{a: 1, a: 2}}\n", "duplicate key 'a' at line 3, column 15 (first at line 3, column 9)"),
])
def test_a_key_written_twice_outside_any_entry_fails_the_file_in_one_line(tmp_path, text, line):
    path = write(tmp_path, text)
    assert line in file_refusal(path)


def test_a_merge_key_fails_its_entry(tmp_path):
    # `<<` lets the entry's own `acl` hide the merged one, as a key written twice does.
    path = write(tmp_path, f"sources:\n  - {{<<: {{acl: [public]}}, id: x, kind: document, format: text, path: a.txt, "
                           f"acl: [user:bob]}}\n  - {OK_ENTRY}\n")
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source)
    assert "'<<' merge key at line 2" in one_line(loaded["x"])


# ---------------------------------------------------------------- anchors and aliases


def laughs(depth: int, indent: str) -> list[str]:
    """Each level a list of nine aliases of the one before: 9**depth strings from ~650 bytes."""
    first = f'{indent}l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    return [first] + [f"{indent}l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, depth)]


def alias_bomb(depth: int) -> str:
    """The bomb outside the entries, an entry's title aliasing its last level."""
    return "\n".join(["laughs:", *laughs(depth, "  "), "sources:", f"  - {OK_ENTRY}",
                      f"  - {{id: bomb, kind: document, format: text, path: a.txt, acl: [public], "
                      f"title: *l{depth - 1}}}"]) + "\n"


def bomb_in_an_entry(depth: int) -> str:
    """The bomb inside the entry it poisons: its title would be the nested list."""
    return "\n".join(["sources:", f"  - {OK_ENTRY}", "  - id: bomb", "    kind: document", "    format: text",
                      "    path: a.txt", "    acl: [public]", *laughs(depth, "    "),
                      f"    title: *l{depth - 1}"]) + "\n"


@pytest.mark.parametrize("make", [alias_bomb, bomb_in_an_entry])
def test_an_alias_bomb_is_refused_before_it_expands(tmp_path, make):
    text = make(9)
    assert len(text.encode()) < 1000
    message = file_refusal(write(tmp_path, text))
    first_anchor = next(n for n, line in enumerate(text.splitlines(), start=1) if "&l0" in line)
    assert f"line {first_anchor} holds the YAML anchor &l0" in message, message
    assert "takes no anchors or aliases" in message


@pytest.mark.parametrize("text, shown", [
    (f"sources:\n  - {OK_ENTRY}\n  - &first {{id: x, kind: document, format: text, path: a.txt, acl: [public]}}\n",
     "line 3 holds the YAML anchor &first"),
    (f"sources:\n  - {OK_ENTRY}\n  - *nowhere\n", "line 3 holds the YAML alias *nowhere"),
])
def test_an_anchor_or_alias_is_refused_naming_its_line(tmp_path, text, shown):
    message = file_refusal(write(tmp_path, text))
    assert shown in message and "takes no anchors or aliases" in message, message


# ---------------------------------------------------------------- one value where one belongs


@pytest.mark.parametrize("field, value, got", [
    ("title", "[The, Title]", "a list"),
    ("author", "{name: Calvin}", "a mapping"),
    ("translation", "[KJV]", "a list"),
    ("tradition", "[reformed, catholic]", "a list"),
    ("tier", "[1]", "a list"),
    ("effective_date", "[2024-01-01]", "a list"),
    ("scope", "{a: b}", "a mapping"),
    ("select", "[Romans]", "a list"),
])
def test_a_list_or_mapping_where_one_value_belongs_fails_that_entry(tmp_path, field, value, got):
    path = write(tmp_path, f"sources:\n  - {{id: x, kind: document, format: text, path: a.txt, acl: [public], "
                           f"{field}: {value}}}\n  - {OK_ENTRY}\n")
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source)
    message = one_line(loaded["x"])
    assert message == f"source 'x': '{field}' must be one value (text, a number or a date), got {got}", message
    assert loaded["x"].acl == ("public",)


def test_text_numbers_and_dates_stay_accepted_as_metadata(tmp_path):
    path = write(tmp_path, "sources:\n  - {id: x, kind: document, format: text, path: a.txt, acl: [public], "
                           "title: The Title, author: 1559, tier: 2, effective_date: 2024-01-31, scope: 1.5}\n")
    source = load_source(path, "x")
    assert source.title == "The Title" and source.metadata["tier"] == 2
    assert str(source.metadata["effective_date"]) == "2024-01-31"


def test_a_date_that_is_none_fails_its_entry_alone(tmp_path):
    # YAML reads 2024-13-01 as a date and Python refuses it: that sank the whole file, unnamed.
    path = write(tmp_path, "sources:\n  - {id: x, kind: document, format: text, path: a.txt, acl: [public], "
                           f"effective_date: 2024-13-01}}\n  - {OK_ENTRY}\n")
    loaded = load_sources(path, corpus_dir=tmp_path)
    assert isinstance(loaded["ok"], Source)
    assert one_line(loaded["x"]) == "source 'x': the entry at line 2, column 5 cannot be read: month must be in 1..12"


# ---------------------------------------------------------------- nesting


def flow_nest(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def block_nest(depth: int, indent: int) -> str:
    """Mappings `depth` deep written as blocks, each key one line deeper than the last."""
    return "\n".join(" " * (indent + 2 * level) + f"k{level}:" for level in range(depth)) + " 1"


def deep_entry(depth: int) -> str:
    return f"  - {{id: deep, kind: document, format: text, path: a.txt, acl: [public], rules: {{x: {flow_nest(depth)}}}}}\n"


def test_rules_nested_too_deep_fail_their_entry_alone_in_one_line(tmp_path):
    # The issue's file: 717 bytes of `rules:` nesting 300 lists ended in a RecursionError
    # traceback, and every source of the file failed with it.
    block = ("  - id: deep\n    kind: document\n    format: text\n    path: a.txt\n    acl: [public]\n"
             f"    rules:\n{block_nest(300, 6)}\n")
    for entry in (deep_entry(300), deep_entry(MAX_BRACKETS - 10), block):
        loaded = load_sources(write(tmp_path, f"sources:\n  - {OK_ENTRY}\n{entry}"), corpus_dir=tmp_path)
        assert isinstance(loaded["ok"], Source)
        message = one_line(loaded["deep"])
        assert message.startswith(f"source 'deep': lists and mappings nested more than {MAX_NESTING} deep at line "), \
            message
        assert loaded["deep"].acl == ("public",)  # still says who may see versions built from it before


def test_brackets_too_deep_to_read_refuse_the_file_at_once(tmp_path):
    # 20,000 brackets on one line took PyYAML's scanner 36 s: the file is refused before.
    started = time.monotonic()
    message = file_refusal(write(tmp_path, f"sources:\n  - {OK_ENTRY}\n{deep_entry(20_000)}"))
    assert f"brackets nested more than {MAX_BRACKETS:,} deep at line 3" in message, message
    assert time.monotonic() - started < 10


def test_nesting_within_the_bound_is_read(tmp_path):
    # The bound counts from the document: the document (1), sources (2), the entry (3), rules (4).
    rules = "[" * (MAX_NESTING - 4) + "1" + "]" * (MAX_NESTING - 4)
    path = write(tmp_path, f"sources:\n  - {{id: x, kind: document, format: text, path: a.txt, acl: [public], "
                           f"rules: {{x: {rules}}}}}\n")
    assert read_entries(path)[0]["rules"]["x"] == eval(rules)


def test_nesting_too_deep_outside_any_entry_fails_the_file_in_one_line(tmp_path):
    message = file_refusal(write(tmp_path, f"other: {flow_nest(300)}\nsources:\n  - {OK_ENTRY}\n"))
    assert f"nested more than {MAX_NESTING} deep at line 1" in message, message


# ---------------------------------------------------------------- notes: a key written twice


def test_a_note_with_a_key_written_twice_fails_naming_the_file_and_line(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "First."}) + "\n\n"
                    + '{"id": "b", "text": "Shown to a reader.", "text": "Indexed instead."}\n')
    source = Source(id="bob", kind="notes", format="notes-jsonl", acl=("user:bob",), path=path)
    with pytest.raises(SourceError) as error:
        notes.parse(source, notes.read(source, None))
    message = one_line(error.value)
    assert message.startswith("source 'bob': line 3: key 'text' is written twice") and str(path) in message, message


def test_a_nested_object_with_a_key_written_twice_fails_too(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text('{"id": "a", "text": "x", "tags": {"k": 1, "k": 2}}\n')
    source = Source(id="bob", kind="notes", format="notes-jsonl", acl=("user:bob",), path=path)
    with pytest.raises(SourceError, match=r"line 1: key 'k' is written twice"):
        notes.parse(source, notes.read(source, None))
