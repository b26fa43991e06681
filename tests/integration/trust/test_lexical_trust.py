"""The lexical side of an index as an attacker probed it (issue 34): BM25's statistics move with
no private chunk, a lexical mirror that does not check out is never served, a rebuilt mirror
replaces its files rather than writing into them, and dropping a version removes its mirror.
Each test failed before its fix but the inode one (see its docstring)."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from lectio.embedding.cache import embed_chunks
from lectio.embedding.model import Embedder
from lectio.index import mirror, revocation, versions
from lectio.index.build import build_index
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.rulesets.chunk import chunks_frame
from lectio.rulesets.registry import run_source
from cli import main as cli

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PUBLIC = ("web", "mhcc", "carrow", "notes-bob")
PRIVATE = ("notes-alice", "staff-guide", "diary")
SOURCES = """
sources:
  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,
     select: "Psalm 23; Romans 8", acl: [public]}
  - {id: mhcc, kind: commentary, format: sword-commentary, module: mhcc, select: "Romans 8",
     title: Concise Commentary, author: Matthew Henry, acl: [public]}
  - {id: carrow, kind: modern, format: markdown, path: notes_on_romans.md, title: Notes on Romans,
     author: Helen M. Carrow, acl: [public]}
  - {id: notes-bob, kind: notes, format: notes-jsonl, path: bob.jsonl, title: Bob's notes, acl: ["user:bob"]}
  - {id: notes-alice, kind: notes, format: notes-jsonl, path: alice.jsonl, title: Alice's notes, acl: ["user:alice"]}
  - {id: staff-guide, kind: document, format: markdown, path: staff_guide.md, title: Study Group Leader Guide,
     acl: ["group:staff"]}
  - {id: diary, kind: document, format: text, path: diary.txt, title: A diary, acl: ["user:carol"]}
"""
FILES = {"notes_on_romans.md": FIXTURES / "modern" / "notes_on_romans.md",
         "staff_guide.md": FIXTURES / "staff_guide.md",
         "bob.jsonl": FIXTURES / "notes" / "bob.jsonl", "alice.jsonl": FIXTURES / "notes" / "alice.jsonl"}
# A long private text of the public chunks' common words: with private chunks counted, it would
# move N, the mean length and every word's document frequency a long way.
DIARY = "\n\n".join(f"Day {day}. The Lord is my shepherd; God works all things together for good. Grace, faith, "
                    "the Spirit, our weakness, hope and peace, again and again and again." for day in range(40))
QUERIES = ["the Lord is my shepherd", "God works all things together for good", "the Spirit helps us in our weakness",
           "propitiation wrath", "study group leader", "hospital appointment results", "grace"]


def sources_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lexical-trust")
    (folder / "sources.yaml").write_text(SOURCES)
    for name, path in FILES.items():
        shutil.copy(path, folder / name)
    (folder / "diary.txt").write_text(DIARY)
    return folder / "sources.yaml"


def build(home, conn, sources: Path, source_ids, acls: dict | None = None, live: bool = False) -> str:
    """A version of `source_ids` (each source's ACL replaced by `acls`' where it names one)."""
    read = (chunk for sid in source_ids for chunk in run_source(sources, sid, home.settings.corpus_dir)[1])
    chunks = chunks_frame(list(read))
    for sid, acl in (acls or {}).items():
        chunks["acl"] = [list(acl) if source == sid else old for source, old in zip(chunks["source_id"], chunks["acl"])]
    embed_chunks(conn, chunks, home.embedder)
    return build_index(conn, chunks, home.embedder.model_id, [], switch_live=live).version


@pytest.fixture(scope="module")
def home(home_factory, tmp_path_factory):
    """A home of its own (prune drops versions), with versions of the public sources and Bob's
    notes, without and with the other private sources."""
    sources = sources_folder(tmp_path_factory)
    with home_factory("lectio-lexical-trust-", sources_file=sources) as home:
        home.embedder = Embedder()  # one for every build and search of the home
        with home.connect() as conn:
            home.without = build(home, conn, sources, PUBLIC)
            home.with_private = build(home, conn, sources, PUBLIC + PRIVATE)
        yield home


def ranking(home, conn, version: str, query: str, principals, config: SearchConfig) -> list[tuple[str, float]]:
    response = search(conn, SearchRequest(query, k=20, principals=principals, version=version, config=config),
                      embedder=home.embedder)
    assert response.mode != "none", response.message
    return [(result.chunk_id, result.score) for result in response.results]


# ---------------------------------------------------------------- item 5: BM25's statistics


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("mirrored", [True, False], ids=["mirror", "sql"])
@pytest.mark.parametrize("principals", [("public",), ("public", "user:bob")], ids=["anonymous", "bob"])
def test_private_chunks_added_to_an_index_move_no_one_elses_ranking(home, mode, mirrored, principals):
    config = SearchConfig.from_options(mode=mode, lexical_mirror=mirrored)
    with home.connect() as conn:
        for query in QUERIES:
            without = ranking(home, conn, home.without, query, principals, config)
            with_private = ranking(home, conn, home.with_private, query, principals, config)
            assert without, query  # the comparison is not of empty lists
            # The same chunks, the same scores to the bit.
            assert with_private == without, query


def test_bm25_statistics_are_the_public_chunks_whoever_asks(home):
    with home.connect() as conn:
        without, with_private = (versions.get_version(conn, v) for v in (home.without, home.with_private))
        public = conn.execute(f"SELECT count(*), avg(length(tsv))::float8 FROM {with_private.table_name} "
                              "WHERE acl @> ARRAY['public']").fetchone()
    assert with_private.rows > without.rows > public[0]
    assert with_private.bm25_corpus == without.bm25_corpus == (public[0], pytest.approx(public[1]))


def test_a_home_upgraded_counts_its_versions_statistics_again(home):
    from lectio.index import schema

    with home.connect() as conn:
        version = versions.get_version(conn, home.with_private)
        # As a version built before the rule: every chunk counted, and no bm25_docs.
        conn.execute(f"UPDATE index_versions SET bm25_docs = NULL, avg_doc_lexemes = "
                     f"(SELECT avg(length(tsv)) FROM {version.table_name}) WHERE version = %s", (version.version,))
        conn.execute("UPDATE lectio_schema SET version = %s", (schema.SCHEMA_VERSION - 1,))
        schema.ensure_schema(conn)
        assert versions.get_version(conn, home.with_private).bm25_corpus == version.bm25_corpus


# ---------------------------------------------------------------- item 12: a mirror that does not check out


def replace_file(path: Path, array: np.ndarray) -> None:
    """Another array at `path`, as a new file (this process may have the old one mapped)."""
    path.unlink()
    np.save(path, array)


def lengths_cut_short(path, found):
    replace_file(path / "length.npy", np.asarray(found.arrays["length"])[: len(found.chunk_ids) // 2])


def postings_past_the_last_chunk(path, found):
    replace_file(path / "postings.npy", np.asarray(found.arrays["postings"]) + len(found.chunk_ids))


def runs_that_do_not_add_up(path, found):
    starts = np.array(found.arrays["run_starts"])
    starts[-1] += 5
    replace_file(path / "run_starts.npy", starts)


def run_words_out_of_order(path, found):
    replace_file(path / "run_words.npy", np.array(found.arrays["run_words"])[::-1])


def codes_past_their_values(path, found):
    kinds = np.array(found.arrays["kind"])
    kinds[0] = len(found.manifest["values"]["kind"]) + 3
    replace_file(path / "kind.npy", kinds)


def a_chunk_missing_from_the_manifest(path, found):
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["chunk_ids"] = manifest["chunk_ids"][1:]
    (path / "manifest.json").write_text(json.dumps(manifest))


def a_truncated_file(path, found):
    data = (path / "tf.npy").read_bytes()
    (path / "tf.npy").unlink()
    (path / "tf.npy").write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", [lengths_cut_short, postings_past_the_last_chunk, runs_that_do_not_add_up,
                                    run_words_out_of_order, codes_past_their_values, a_chunk_missing_from_the_manifest,
                                    a_truncated_file])
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_damaged_mirror_is_built_again_never_served(home, damage, mode, caplog):
    settings, version = home.settings, home.with_private
    with home.connect() as conn:
        info = versions.get_version(conn, version)
        mirror.forget(settings.home, version)  # whatever an earlier case left, a mirror built whole
        shutil.rmtree(mirror.folder(settings.home, version), ignore_errors=True)
        found = mirror.ensure(conn, info, settings.home)
        whole = {name: np.array(array) for name, array in found.arrays.items()}
        damage(found.path, found)
        mirror.forget(settings.home, version)  # as a process that starts after the damage
        in_sql = ranking(home, conn, version, QUERIES[0], ("public",),
                         SearchConfig.from_options(mode=mode, lexical_mirror=False))
        with caplog.at_level(logging.WARNING, logger=mirror.__name__):
            mirrored = ranking(home, conn, version, QUERIES[0], ("public",), SearchConfig.from_options(mode=mode))
        assert mirrored == in_sql
        # What served it was built again, whole.
        rebuilt = mirror.load(info, settings.home)
        assert rebuilt is not None and rebuilt is not found
        for name, array in whole.items():
            np.testing.assert_array_equal(rebuilt.arrays[name], array, err_msg=name)
        assert rebuilt.chunk_ids == found.chunk_ids
        assert any(version in record.getMessage() for record in caplog.records)  # and the operator is told


# ---------------------------------------------------------------- low: copy-on-replace


def test_a_rebuild_replaces_every_file_and_a_mapped_reader_keeps_its_copy(home):
    """A reader's mapping stays valid only if a rebuild never writes into the files it mapped.
    This passed before the fix too (a build already wrote a new folder aside); it pins it."""
    settings, version = home.settings, home.without
    with home.connect() as conn:
        info = versions.get_version(conn, version)
        reader = mirror.ensure(conn, info, settings.home)
        held = {name: np.array(array) for name, array in reader.arrays.items()}
        inodes = {path.name: path.stat().st_ino for path in reader.path.iterdir()}
        mirror.build(conn, info, settings.home)
    rebuilt = {path.name: path.stat().st_ino for path in reader.path.iterdir()}
    assert rebuilt.keys() == inodes.keys()
    assert not {name for name in inodes if rebuilt[name] == inodes[name]}  # each a new file
    # Nothing half-built or retired is left beside it.
    assert [path.name for path in reader.path.parent.iterdir() if path.name.startswith(f".{version}-")] == []
    for path in reader.path.iterdir():  # what is at the paths now may even be cut short
        os.truncate(path, 0)
    for name, array in held.items():  # the reader still reads what it mapped
        np.testing.assert_array_equal(reader.arrays[name], array, err_msg=name)
    mirror.forget(settings.home, version)
    shutil.rmtree(reader.path)  # the next search builds it whole again


# ---------------------------------------------------------------- item 7: prune


def test_prune_removes_the_mirrors_of_what_it_drops(home_factory, tmp_path_factory, capsys):
    sources = sources_folder(tmp_path_factory)
    with home_factory("lectio-lexical-prune-", sources_file=sources) as home:
        home.embedder = Embedder()
        with home.connect() as conn:
            leaked = build(home, conn, sources, ("carrow", "notes-alice"), acls={"notes-alice": ("public",)}, live=True)
            older = build(home, conn, sources, ("carrow",), live=True)
            live = build(home, conn, sources, ("carrow", "notes-alice"), live=True)
            built = {v: mirror.ensure(conn, versions.get_version(conn, v), home.settings.home).path
                     for v in (leaked, older, live)}
            # The leak found and revoked: its mirror's files stay until its version is dropped.
            assert leaked in revocation.judge(conn, {"carrow": ("public",), "notes-alice": ("user:alice",)}).revoked
        mirrors = home.settings.home / "mirrors"
        assert all((path / "manifest.json").is_file() for path in built.values())
        # What a killed build of it left, and the mirror of a version dropped before drops took it.
        (mirrors / f".{leaked}-halfbuilt").mkdir()
        (mirrors / f".{leaked}-halfbuilt" / "postings.npy").write_bytes(b"private")
        shutil.copytree(built[older], mirrors / "v999")
        capsys.readouterr()
        assert cli(["index", "prune", "--keep", "0", "--json"]) == 0
        assert set(json.loads(capsys.readouterr().out)["dropped"]) == {leaked}
        # The rollback target (older) and the live version keep theirs.
        assert sorted(path.name for path in mirrors.iterdir()) == sorted([older, live])


# ---------------------------------------------------------------- a switch leaves no SQL window
# Last in the module: it makes a version live in the shared home.


def test_a_version_goes_live_with_its_lexical_mirror_built(home):
    """A search after a switch must not score BM25 in SQL for want of the new version's mirror:
    that fallback reads private postings before row-level security drops them, so its time tells
    an outsider of private words. The build makes the mirror before it switches the version in."""
    with home.connect() as conn:
        before = versions.live_version(conn)
        mirror.remove(home.settings.home, home.with_private)
        try:
            assert build(home, conn, home.settings.sources_file, PUBLIC + PRIVATE, live=True) == home.with_private
            assert versions.live_version(conn) == home.with_private
            assert (mirror.folder(home.settings.home, home.with_private) / "manifest.json").is_file()
        finally:
            if before is not None:
                versions.switch_live(conn, before)
