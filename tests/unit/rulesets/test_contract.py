"""The ruleset contract: what the registry holds every ruleset to after chunking (the token cap,
unique chunk ids, declared granularities), what each tells of its parsed structure, and the
headed-prose frame a new content type reuses, on real fixture sources and the real tokenizer."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from lectio.rulesets import registry
from lectio.rulesets.chunk import GRANULARITIES, Chunk, source_chunk_id
from lectio.rulesets.headed import HeadedProse, Outline
from lectio.rulesets.notes import Notes
from lectio.sources import Source, SourceError, load_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ALICE = FIXTURES / "notes" / "alice.jsonl"
NOTES_KEY = ("notes-jsonl", None)


def alice() -> Source:
    return Source(id="notes-alice", kind="notes", format="notes-jsonl", acl=("user:alice",), path=ALICE,
                  metadata={"title": "Alice's study notes"})


def chunk_with(monkeypatch, rules) -> list[Chunk]:
    """Alice's notes chunked through the registry by `rules` in place of the notes ruleset."""
    monkeypatch.setitem(registry.FORMATS, NOTES_KEY, registry.Format(rules, rules.version))
    return registry.chunk_source(registry.parse_source(registry.read_source(alice(), FIXTURES)))


def test_every_ruleset_declares_known_granularities_and_one_version_per_named_ruleset():
    for fmt in registry.FORMATS.values():
        assert fmt.rules.granularities and fmt.rules.granularities <= GRANULARITIES, fmt.rules.name
        assert fmt.ruleset == ",".join(sorted(fmt.rules.versions.values()))


def test_a_chunk_over_the_cap_fails_naming_the_source_and_the_chunk(monkeypatch):
    class Tight(Notes):
        max_tokens = 20

    with pytest.raises(SourceError, match=r"source 'notes-alice': chunk notes-alice/\S+ has \d+ word pieces; "
                                          r"its ruleset allows 20"):
        chunk_with(monkeypatch, Tight())


def test_a_chunk_id_made_twice_fails_naming_it(monkeypatch):
    class Twice(Notes):
        def chunk(self, source, notes):
            made = super().chunk(source, notes)
            return made + made[:1]

    with pytest.raises(SourceError, match=r"source 'notes-alice': chunk notes-alice/\S+ is made twice"):
        chunk_with(monkeypatch, Twice())


def test_a_granularity_the_ruleset_does_not_declare_fails(monkeypatch):
    class Elsewhere(Notes):
        granularities = frozenset({"verse"})

    with pytest.raises(SourceError, match=r"chunk notes-alice/\S+ has granularity 'note', which ruleset 'notes' "
                                          r"does not cut \(verse\)"):
        chunk_with(monkeypatch, Elsewhere())


def test_a_granularity_no_filter_knows_is_refused_when_registered():
    class Typo(Notes):
        granularities = frozenset({"note", "notes"})

    with pytest.raises(ValueError, match="ruleset 'notes' cuts granularities no filter knows: notes"):
        registry.Format.of(Typo())


def test_within_the_contract_the_registry_returns_the_rulesets_own_chunks(monkeypatch):
    assert chunk_with(monkeypatch, Notes()) == Notes().chunk(alice(), Notes().parse(alice(), Notes().read(alice())))


def test_each_ruleset_tells_its_structural_units():
    parsed = registry.parse_source(registry.read_source(load_source(FIXTURES / "patristic" / "sources.yaml",
                                                                    "severinus-baptism"), FIXTURES))
    assert registry.structure_facts(parsed) == {"units_read": parsed.units_read,
                                                "structural_units": len(parsed.structure.divisions)}


# A content type written on the headed-prose base: its own headings and chunks, nothing else.


@dataclass(frozen=True)
class Sermon:
    key: str
    paragraphs: list[str]


class _Sermons(Outline[Sermon]):
    def opens(self, heading, level):
        return re.fullmatch(r"Sermon (\d+)", heading)

    def open(self, found, heading):
        self.close()
        self.number = found[1]

    def heading(self, heading):
        raise AssertionError(f"no other heading in this test: {heading}")

    def division(self, paragraphs):
        return Sermon(self.number, list(paragraphs))


class Sermons(HeadedProse):
    name, versions, granularities, described = "sermons", {"default": "sermons-1"}, frozenset({"section"}), "a sermon book"
    work = staticmethod(lambda author, title, sermons: (author, title, sermons))
    outline = _Sermons

    def repeated(self, sermon):
        return f"sermon {sermon.key} is there twice"

    def chunk(self, source, work):
        return []


def sermons(tmp_path: Path, text: str, **metadata) -> Source:
    path = tmp_path / "sermons.md"
    path.write_text(text)
    return Source(id="sermons", kind="sermons", format="markdown", acl=("public",), path=path, metadata=metadata)


def test_headed_prose_reads_the_title_the_divisions_and_their_paragraphs(tmp_path):
    source = sermons(tmp_path, "# Plain Words\n\n# Sermon 1\n\nGrace.\n\nPeace.\n\n# Sermon 2\n\nHope.\n",
                     author="A. Preacher")
    author, title, found = Sermons().parse(source, Sermons().read(source))
    assert (author, title) == ("A. Preacher", "Plain Words")
    assert found == (Sermon("1", ["Grace.", "Peace."]), Sermon("2", ["Hope."]))


@pytest.mark.parametrize("text, metadata, problem", [
    ("# Sermon 1\n\nGrace.\n", {}, "a sermon book needs an 'author'"),
    ("# Plain Words\n", {"author": "A"}, "has no paragraphs of text"),
    ("# Sermon 1\n\nGrace.\n\n# Sermon 1\n\nAgain.\n", {"author": "A"}, "sermon 1 is there twice"),
])
def test_headed_prose_refuses_a_work_without_author_text_or_unique_divisions(tmp_path, text, metadata, problem):
    source = sermons(tmp_path, text, **metadata)
    with pytest.raises(SourceError, match=f"source 'sermons': .*{problem}"):
        Sermons().parse(source, Sermons().read(source))
