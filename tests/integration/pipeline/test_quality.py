"""Data-quality checks on real chunks of small fixtures: the real readers and chunkers,
the real model, the embedded PostgreSQL; corruption is applied to the chunk frames the way a
faulty chunker or a stale output would leave them."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, AssetSelection, DagsterInstance, FilesystemIOManager, materialize

from lectio.rulesets import registry
from lectio.quality import admission, stored
from lectio.quality.checks import (blocking_checks, chunk_count, chunk_sizes, embedding_vectors, header_presence,
                                   permission_tags, unique_ids, verse_coverage)
from lectio.quality.results import CheckResult
from lectio.embedding import cache
from lectio.index import versions
from lectio.rulesets.chunk import chunks_frame, content_hash
from lectio.embedding.cache import embed_chunks
from lectio.index.build import BuildChecks, build_index
from lectio.embedding.model import DIMENSIONS, MAX_TEXT_TOKENS, Embedder
from lectio.sources import load_source, load_sources
from pipelines.definitions import build_definitions

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TABLE_HEADER = "Code | Title | Format | Price (£) | Staff note"
TABLE_CHUNK = "bookshop/price-list/2"  # the second piece of a long table: its header row is repeated

SOURCES = """\
sources:
  - {id: bookshop, kind: document, format: markdown, path: bookshop_policy.md,
     title: Parish Bookshop Staff Policy, acl: ["group:staff"]}
  - {id: severinus-baptism, kind: patristic, format: text, path: homily_on_baptism.txt,
     title: Homily on Holy Baptism, author: Severinus of Thagora, acl: [public]}
  - {id: notes-alice, kind: notes, format: notes-jsonl, path: alice.jsonl,
     title: Alice's study notes, acl: ["user:alice"]}
"""


def chunked(sources_file: Path, source_id: str, corpus_dir: Path):
    parsed, chunks = registry.run_source(sources_file, source_id, corpus_dir)
    return chunks_frame(chunks), parsed.structure


@pytest.fixture(scope="module")
def quality_sources(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("quality")
    shutil.copy(FIXTURES / "documents" / "bookshop_policy.md", folder)
    shutil.copy(FIXTURES / "patristic" / "homily_on_baptism.txt", folder)
    shutil.copy(FIXTURES / "notes" / "alice.jsonl", folder)
    (folder / "sources.yaml").write_text(SOURCES)
    return folder / "sources.yaml"


@pytest.fixture(scope="module")
def clean(quality_sources, fixture_sources, settings):
    """Source id → (chunk frame, parsed structure), as the real pipeline makes them."""
    made = {sid: chunked(quality_sources, sid, settings.corpus_dir) for sid in ("bookshop", "severinus-baptism", "notes-alice")}
    made.update({sid: chunked(fixture_sources, sid, settings.corpus_dir) for sid in ("mhcc", "web")})
    return made


def sources_of(sources_file: Path):
    return load_sources(sources_file)


def corrupt(frame: pd.DataFrame, chunk_id: str, **changes) -> pd.DataFrame:
    """A copy of `frame` with one chunk's fields changed (its content hash following its text)."""
    frame = frame.copy()
    row = frame.index[frame["chunk_id"] == chunk_id][0]
    for column, value in changes.items():
        frame.at[row, column] = value
    frame.at[row, "content_hash"] = content_hash(frame.at[row, "text"])
    return frame


def headless(frame: pd.DataFrame) -> pd.DataFrame:
    text = frame.loc[frame["chunk_id"] == TABLE_CHUNK, "text"].iloc[0]
    assert f"\n{TABLE_HEADER}\n" in text
    return corrupt(frame, TABLE_CHUNK, text=text.replace(f"{TABLE_HEADER}\n", ""))


def by_name(results) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


# ---------------------------------------------------------------- chunk checks


def test_clean_chunks_pass_every_check(clean, quality_sources, fixture_sources):
    sources = {**sources_of(fixture_sources), **sources_of(quality_sources)}
    for sid, (frame, parsed) in clean.items():
        results = [*blocking_checks(frame, sources[sid], parsed), chunk_sizes(frame, registry.format_of(sources[sid]).rules),
                   verse_coverage(frame, parsed)]
        assert all(r.passed for r in results), (sid, [(r.name, r.description) for r in results if not r.passed])
    checks = by_name(blocking_checks(*clean["bookshop"][:1], sources["bookshop"], clean["bookshop"][1]))
    assert checks["header_presence"].details["table_chunks"] >= 2  # the long price list is split
    web = verse_coverage(*clean["web"])
    assert web.counts["verses"] == 104 + 21 + 39 + 6 + 36 and "exactly once" in web.description
    both = pd.concat([frame for frame, _ in clean.values()], ignore_index=True)
    assert admission.admit(both[both["source_id"].isin(sources_of(quality_sources))], sources_of(quality_sources)) == {}


def test_a_chunk_without_acl_fails_only_the_permission_check(clean, quality_sources):
    frame, parsed = clean["bookshop"]
    broken = corrupt(frame, "bookshop/price-list/3", acl=[])
    checks = by_name(blocking_checks(broken, sources_of(quality_sources)["bookshop"], parsed))
    permission = checks["permission_tags"]
    assert not permission.passed and permission.blocking
    assert permission.examples == ("bookshop/price-list/3",) and permission.counts["chunks without an ACL"] == 1
    ge = permission.expectations[0]
    assert ge["expectation"] == "expect_column_values_to_be_between" and not ge["success"] and ge["unexpected_count"] == 1
    assert checks["header_presence"].passed and checks["unique_chunk_ids"].passed


def test_a_chunk_more_visible_than_its_source_fails(clean, quality_sources):
    frame, parsed = clean["bookshop"]
    broken = corrupt(frame, "bookshop/price-list/1", acl=["group:staff", "public"])
    permission = permission_tags(broken, sources_of(quality_sources)["bookshop"])
    assert not permission.passed and permission.counts["chunks more visible than their source"] == 1
    assert permission.examples == ("bookshop/price-list/1",)


def test_a_table_chunk_without_its_header_row_fails_only_the_header_check(clean, quality_sources):
    frame, parsed = clean["bookshop"]
    checks = by_name(blocking_checks(headless(frame), sources_of(quality_sources)["bookshop"], parsed))
    header = checks["header_presence"]
    assert not header.passed and header.blocking
    assert header.examples == (TABLE_CHUNK,) and header.counts["table chunks without their header row"] == 1
    assert checks["permission_tags"].passed and checks["unique_chunk_ids"].passed


def test_missing_context_of_each_kind_fails_the_header_check(clean):
    commentary, _ = clean["mhcc"]
    first = commentary["chunk_id"].iloc[0]
    text = commentary["text"].iloc[0]
    assert text.startswith("[Commentary on Romans 8")
    result = header_presence(corrupt(commentary, first, text=text.split("\n\n", 1)[1]))
    assert not result.passed and result.counts["commentary chunks without a context header"] == 1
    assert result.examples == (first,)

    patristic, _ = clean["severinus-baptism"]
    first = patristic["chunk_id"].iloc[0]
    metadata = {k: v for k, v in patristic["metadata"].iloc[0].items() if k != "topics"}
    result = header_presence(corrupt(patristic, first, metadata=metadata))
    assert not result.passed and result.counts["patristic chunks without their tags"] == 1

    document, parsed = clean["bookshop"]
    first = document["chunk_id"].iloc[0]
    result = header_presence(corrupt(document, first, breadcrumb=""), parsed)
    assert not result.passed and result.counts["document chunks without a breadcrumb"] == 1


def test_duplicate_ids_fail(clean):
    frame, _ = clean["notes-alice"]
    twice = pd.concat([frame, frame.iloc[:1]], ignore_index=True)
    result = unique_ids(twice)
    assert not result.passed and result.examples == (frame["chunk_id"].iloc[0],)


def test_size_check_allows_only_window_embedded_granularities(clean, quality_sources, fixture_sources):
    web, _ = clean["web"]
    scripture = registry.format_of(load_source(fixture_sources, "web")).rules
    sizes = chunk_sizes(web, scripture)
    assert sizes.passed and not sizes.blocking
    over = int(((web["granularity"] == "pericope") & (web["tokens"] > MAX_TEXT_TOKENS)).sum())
    assert sizes.counts.get("window_embedded_pericope", 0) == over
    # A verse is held to the model's window like any chunk of any ruleset: only the granularities
    # scripture embeds by windows pass it.
    verse = web.loc[web["granularity"] == "verse", "chunk_id"].iloc[0]
    long_verse = web.copy()
    long_verse.loc[long_verse["chunk_id"] == verse, "tokens"] = MAX_TEXT_TOKENS + 1
    assert chunk_sizes(long_verse, scripture).examples == (verse,)
    document, _ = clean["bookshop"]
    first = document["chunk_id"].iloc[0]
    long = document.copy()
    long.loc[long["chunk_id"] == first, "tokens"] = MAX_TEXT_TOKENS + 1
    result = chunk_sizes(long, registry.format_of(load_source(quality_sources, "bookshop")).rules)
    assert not result.passed and result.examples == (first,)


def test_chunking_and_the_size_check_state_one_cap_policy():
    """What chunking lets through and what the quality check passes are one rule (Ruleset.fits)."""
    for (fmt, kind), handler in registry.FORMATS.items():
        rules = handler.rules
        for granularity in rules.granularities:
            frame = pd.DataFrame({"chunk_id": ["a"], "granularity": [granularity], "tokens": [rules.max_tokens + 1]})
            passed = chunk_sizes(frame, rules).passed
            assert passed == rules.fits(granularity, rules.max_tokens + 1), (fmt, kind, granularity)


def test_a_sudden_drop_in_chunks_is_a_warning():
    drop = chunk_count(70, 100)
    assert not drop.passed and drop.severity == "warn" and not drop.blocking and "30%" in drop.description
    assert chunk_count(90, 100).passed
    assert chunk_count(10, None).passed  # a first run has nothing to compare
    assert chunk_count(8, 400, same_rules=False).passed  # new rules: new counts by design


def test_every_verse_once_at_verse_granularity(clean, fixture_sources):
    frame, parsed = clean["web"]
    verse = "rom_8_28_web"
    missing = verse_coverage(frame[frame["chunk_id"] != verse], parsed)
    assert not missing.passed and missing.examples == ("rom_8_28",)
    twice = pd.concat([frame, frame[frame["chunk_id"] == verse].assign(chunk_id="rom_8_28_again")])
    assert not verse_coverage(twice, parsed).passed
    # A verse the module leaves empty is reported, not failed.
    emptied = parsed.copy()
    emptied.loc[emptied["ref"] == "rom_8_28", "text"] = ""
    web = load_source(fixture_sources, "web")
    rechunked = chunks_frame(registry.chunk_source(registry.Parsed(web, emptied, len(emptied))))
    result = verse_coverage(rechunked, emptied)
    assert result.passed and result.counts["empty_verse_slots"] == 1 and "rom_8_28" in result.details["empty_verse_slots"]


def test_great_expectations_stays_quiet(clean, capfd):
    unique_ids(clean["notes-alice"][0])
    captured = capfd.readouterr()
    assert "Calculating Metrics" not in captured.err + captured.out
    assert "%|" not in captured.err  # no tqdm bar of any name


# ---------------------------------------------------------------- embeddings and index versions


def test_embedding_check_catches_bad_vectors(conn, clean):
    unit = np.zeros(DIMENSIONS, dtype=np.float32)
    unit[0] = 1.0
    nan = unit.copy()
    nan[1] = np.nan
    result = embedding_vectors(["a", "b", "c", "d"], [unit, unit * 2, nan, unit[:10]])
    assert not result.passed and result.blocking
    assert result.counts["vectors not of unit length"] == 1 and result.counts["vectors with NaN or infinite values"] == 1
    assert result.counts["vectors of the wrong dimension"] == 1 and set(result.examples) == {"b", "c", "d"}

    # Through the cache: pgvector refuses NaN itself, so a stored bad vector is a wrong length.
    model = "quality-test-model"
    conn.execute("DELETE FROM embedding_cache WHERE model_id = %s", (model,))
    cache.store_embeddings(conn, ["good", "long"], np.stack([unit, unit * 3]), model)
    cached = stored.stored_embeddings(conn, ["good", "long", "absent"], model)
    assert not cached.passed
    assert cached.counts["vectors not of unit length"] == 1 and cached.counts["texts without an embedding"] == 1
    assert set(cached.examples) == {"long", "absent"}

    frame, _ = clean["notes-alice"]
    embedder = Embedder()
    embed_chunks(conn, frame, embedder)
    assert stored.stored_embeddings(conn, frame["content_hash"], embedder.model_id).passed


def test_row_count_check_on_real_versions(main_run, conn, clean):
    live = versions.get_version(conn, versions.live_version(conn))
    assert stored.index_rows(conn, live.version, main_run.index["rows"]).passed
    frame = pd.concat([clean["bookshop"][0], clean["notes-alice"][0]], ignore_index=True)
    embedder = Embedder()
    embed_chunks(conn, frame, embedder)
    outcome = build_index(conn, frame, embedder.model_id, [], switch_live=False)
    assert outcome.rejected == {} and not outcome.live
    assert stored.index_rows(conn, outcome.version, len(frame)).passed
    wrong = stored.index_rows(conn, outcome.version, len(frame) + 1)
    assert not wrong.passed and f"for {len(frame) + 1} chunks" in wrong.description


def test_corrupted_chunks_never_reach_the_index(main_run, conn, clean, quality_sources, fixture_sources):
    live_before = versions.live_version(conn)
    bookshop = headless(clean["bookshop"][0])
    notes = corrupt(clean["notes-alice"][0], clean["notes-alice"][0]["chunk_id"].iloc[0], acl=[])
    severinus = clean["severinus-baptism"][0]
    embedder = Embedder()
    embed_chunks(conn, severinus, embedder)
    frame = pd.concat([bookshop, notes, severinus], ignore_index=True)
    # The session's sources too: a file without them would revoke the live version that holds them.
    outcome = build_index(conn, frame, embedder.model_id, [],
                          checks=BuildChecks({**sources_of(fixture_sources), **sources_of(quality_sources)}))
    assert set(outcome.rejected) == {"bookshop", "notes-alice"}
    assert "header_presence" in outcome.rejected["bookshop"] and "permission_tags" in outcome.rejected["notes-alice"]
    assert not outcome.live and versions.live_version(conn) == live_before
    assert "bookshop" in outcome.reason and "header_presence" in outcome.reason
    assert versions.get_version(conn, outcome.version).sources == ["severinus-baptism"]

    # With every source rejected nothing is built, and the error names them and the checks.
    with pytest.raises(ValueError, match=r"bookshop: header_presence.*notes-alice: permission_tags"):
        build_index(conn, pd.concat([bookshop, notes], ignore_index=True), embedder.model_id, [],
                    checks=BuildChecks(sources_of(quality_sources)))
    assert versions.live_version(conn) == live_before


# ---------------------------------------------------------------- through Dagster

DAGSTER_SOURCES = """\
sources:
  - {{id: dq-guide, kind: document, format: markdown, path: staff_guide.md,
     title: Study Group Leader Guide, effective_date: "2026-01-01", acl: [{staff_acl}]}}
  - {{id: dq-notes, kind: notes, format: notes-jsonl, path: alice.jsonl,
     title: Alice's study notes, acl: ["user:alice"]}}
"""
INGEST = ["raw_texts", "parsed_structure", "chunks", "embeddings"]
# Source ids of their own: building an index under a narrowed ACL revokes every version of the
# database that shows more, and the session's live index has a staff-guide of its own.


def test_a_failing_check_blocks_the_source_in_dagster(main_run, conn, settings, tmp_path, foreign_sources):
    """A stored chunk output made more visible than its source (as a chunker bug or a tampered
    store would) fails its blocking check and keeps embeddings from running; an ACL narrowed in
    the sources file afterwards keeps the source out of the next index."""
    shutil.copy(FIXTURES / "staff_guide.md", tmp_path)
    shutil.copy(FIXTURES / "notes" / "alice.jsonl", tmp_path)
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(DAGSTER_SOURCES.format(staff_acl='"group:staff"'))
    after.write_text(DAGSTER_SOURCES.format(staff_acl='"user:alice"'))
    instance = DagsterInstance.ephemeral()
    io_manager = FilesystemIOManager(base_dir=str(tmp_path / "storage"))

    def run(sources_file, selection, partition_key=None):
        defs = build_definitions(sources_file)
        resources = {**defs.resources, "io_manager": io_manager}
        return materialize([*defs.assets, *defs.asset_checks], selection=selection, partition_key=partition_key,
                           resources=resources, instance=instance, raise_on_error=False)

    for partition in ("dq-guide", "dq-notes"):
        result = run(before, AssetSelection.assets(*INGEST), partition)
        assert result.success
        evaluations = result.get_asset_check_evaluations()
        assert {e.check_name for e in evaluations} >= {"permission_tags", "header_presence", "embedding_vectors"}
        assert all(e.passed for e in evaluations), [(e.check_name, e.description) for e in evaluations if not e.passed]
        permission = next(e for e in evaluations if e.check_name == "permission_tags")
        assert permission.metadata["great_expectations"].value[0]["success"]

    stored = tmp_path / "storage" / "chunks" / "dq-guide"
    frame = pickle.loads(stored.read_bytes())
    frame.at[frame.index[0], "acl"] = ["group:staff", "public"]
    stored.write_bytes(pickle.dumps(frame))
    checks_then_embed = AssetSelection.checks_for_assets(AssetKey("chunks")) | AssetSelection.assets("embeddings")
    result = run(before, checks_then_embed, "dq-guide")
    assert not result.success
    failed = {e.check_name: e for e in result.get_asset_check_evaluations() if not e.passed}
    assert set(failed) == {"permission_tags"}
    assert failed["permission_tags"].metadata["source"].value == "dq-guide"
    assert "more visible" in failed["permission_tags"].description
    # The blocking check kept embeddings from running for the source.
    assert AssetKey("embeddings") not in {e.asset_key for e in result.get_asset_materialization_events()}

    # The index is built from what the earlier run stored; the domain gate keeps the source out.
    # The file lists none of the session's sources, so it revokes the session's live version:
    # with nothing safe live, the new version goes live without the failed source.
    live_before = versions.live_version(conn)
    result = run(after, AssetSelection.assets("search_index"))
    assert result.success
    metadata = result.asset_materializations_for_node("search_index")[0].metadata
    assert "dq-guide: permission_tags" in metadata["quality_failures"].value
    assert metadata["sources"].value == "dq-notes"
    assert versions.get_version(conn, live_before).status == "revoked"
    assert metadata["live"].value is True and versions.live_version(conn) == metadata["version"].value
    rows = next(e for e in result.get_asset_check_evaluations() if e.check_name == "index_row_count")
    assert rows.passed


def test_the_index_gate_reads_no_file_again(clean, quality_sources, tmp_path):
    """The gate judges the chunks as they were cut: a document edited or deleted since then is
    not parsed again (its new text would be checked in its own next run)."""
    frame = clean["bookshop"][0]
    folder = tmp_path / "moved"
    shutil.copytree(quality_sources.parent, folder)
    sources = load_sources(folder / "sources.yaml")
    (folder / "bookshop_policy.md").unlink()
    assert admission.admit(frame, sources) == {}
    # What the chunks show is still checked: a split table chunk that lost its header row fails.
    assert "header_presence" in {r.name for r in admission.admit(headless(frame), sources)["bookshop"]}


def test_an_unknown_granularity_fails_the_integrity_check(clean):
    frame = clean["bookshop"][0]
    odd = corrupt(frame, frame["chunk_id"].iloc[0], granularity="sectoin")
    result = unique_ids(odd)
    assert not result.passed and result.counts["chunks of an unknown granularity"] == 1
    assert {e["expectation"] for e in result.expectations} >= {"expect_column_values_to_be_in_set"}
    assert unique_ids(frame).passed
