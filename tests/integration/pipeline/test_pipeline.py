"""The main job end to end on the fixture corpus: real readers, real model, real PostgreSQL."""

import json
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from lectio.index import versions
from cli import main as cli
from pipelines.compute_logs import TerminalComputeLogManager
from lectio.retrieval.filters import Filters
from lectio.retrieval import SearchRequest, search
from pipelines.definitions import build_definitions
from pipelines.runners import run_main

pytestmark = [pytest.mark.slow, pytest.mark.network]


def source_outcome(report, source_id):
    return next(s for s in report.sources if s.source_id == source_id)


def test_main_job_indexes_every_source(main_run, conn):
    assert not main_run.failed, [s.error for s in main_run.failed]
    assert main_run.index["ok"] and main_run.index["live"]
    web = source_outcome(main_run, "web")
    assert web.facts["parsed_structure"]["verses"] == 104 + 21 + 39 + 6 + 36  # Phil, Rom 5, Rom 8, Ps 23, John 3
    expected_rows = sum(s.facts["chunks"]["chunks"] for s in main_run.sources)
    live = versions.get_version(conn, versions.live_version(conn))
    assert live.rows == expected_rows == main_run.index["rows"]
    assert sorted(live.sources) == sorted(s.source_id for s in main_run.sources)
    assert {"web", "kjv", "mhcc", "westminster-shorter", "severinus-baptism", "carrow-romans"} <= set(live.sources)


def test_reference_queries_return_the_verse_first(main_run, conn):
    results = search(conn, SearchRequest("Romans 5:1")).results
    assert results[0].chunk_id == "rom_5_1_web" and results[0].refs == ["rom_5_1"]
    assert [r.chunk_id for r in search(conn, SearchRequest("Rom 8:28-30")).results] == [
        f"rom_8_{v}_web" for v in (28, 29, 30)]
    kjv = search(conn, SearchRequest("Phil 4:6", filters=Filters(translation="KJV"))).results
    assert kjv[0].chunk_id == "phil_4_6_kjv"


def test_unknown_references_get_a_message_not_a_crash(main_run, conn):
    response = search(conn, SearchRequest("Romans 17:1"))
    assert not response.results and "Romans has 16 chapters" in response.message
    response = search(conn, SearchRequest("Genesis 1:1"))  # a real verse, but not in the fixture corpus
    assert not response.results and "no verses of Genesis 1:1" in response.message


def test_vector_search_finds_the_paraphrased_verse(main_run, conn):
    results = search(conn, SearchRequest("do not be anxious about anything", k=10)).results
    assert "phil_4_6" in {ref for r in results for ref in r.refs}
    assert all(r.translation in (None, "WEB") for r in results)  # WEB is preferred by default


def test_documents_are_visible_only_to_their_principals(main_run, conn):
    query = "prayer requests shared in the group stay confidential"
    public = search(conn, SearchRequest(query, k=20)).results
    staff = search(conn, SearchRequest(query, k=20, principals=("public", "group:staff"))).results
    assert all(r.source_id != "staff-guide" for r in public)
    assert staff[0].source_id == "staff-guide"
    assert staff[0].text.startswith("Study Group Leader Guide › Leading a study group › Confidentiality")


def test_rerun_embeds_nothing_and_reuses_the_index(main_run, settings, conn):
    live_before = versions.live_version(conn)
    again = run_main(settings, echo=lambda _: None)
    assert not again.failed
    assert all(s.facts["embeddings"]["embedded"] == 0 for s in again.sources)
    assert again.index["reused_existing_version"] and again.index["version"] == live_before
    assert versions.live_version(conn) == live_before


def test_bad_sources_fail_alone_and_the_rest_goes_live(main_run, conn, fixture_sources, monkeypatch, capsys):
    folder = fixture_sources.parent
    (folder / "latin1.txt").write_bytes(b"Caf\xe9 theology")
    (folder / "blank.md").write_text("\n \n")
    (folder / "extra.md").write_text("# Extra\n\nA new, valid document that changes the index.\n")
    bad = folder / "with-bad.yaml"
    bad.write_text(
        fixture_sources.read_text()
        + """
  - {id: missing, kind: document, format: text, path: nowhere.txt, acl: [public]}
  - {id: latin1, kind: document, format: text, path: latin1.txt, acl: [public]}
  - {id: blank, kind: document, format: markdown, path: blank.md, acl: [public]}
  - {id: no-acl, kind: document, format: markdown, path: extra.md}
  - {id: odd-format, kind: document, format: docx, path: extra.md, acl: [public]}
  - {id: extra, kind: document, format: markdown, path: extra.md, acl: [public]}
"""
    )
    live_before = versions.live_version(conn)
    # Through the CLI, as a user runs it: `lectio run --sources … --json`.
    with monkeypatch.context() as patch:
        patch.setenv("LECTIO_SOURCES", str(fixture_sources))
        assert cli(["run", "--sources", str(bad), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    errors = {s["source_id"]: s["error"] for s in report["sources"] if not s["ok"]}
    assert set(errors) == {"missing", "latin1", "blank", "no-acl", "odd-format"}
    assert "does not exist" in errors["missing"] and "'missing'" in errors["missing"]
    assert "not valid UTF-8" in errors["latin1"]
    assert "is empty" in errors["blank"]
    assert "has no 'acl'" in errors["no-acl"]
    assert "unknown format 'docx'" in errors["odd-format"]
    assert {s["source_id"] for s in report["sources"] if s["ok"]} == {s.source_id for s in main_run.sources} | {"extra"}
    # The good sources went live in a new version; the failed ones were never indexed, so nothing
    # of theirs is carried (tests/integration/pipeline/test_failed_source_index.py carries a source's chunks).
    index = report["index"]
    assert index["ok"] and index["live"] and index["version"] != live_before
    built = versions.get_version(conn, index["version"])
    assert built.status == "ready" and "extra" in built.sources and "missing" not in built.sources
    versions.switch_live(conn, live_before)  # the session's later tests search the fixture sources' version


def test_cli_search_json(main_run, capsys):
    assert cli(["search", "Romans 5:1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    first = payload["results"][0]
    assert first["chunk_id"] == "rom_5_1_web" and first["refs"] == ["rom_5_1"]
    assert set(first) >= {"rank", "chunk_id", "kind", "refs", "source_id", "breadcrumb", "text", "score"}
    assert cli(["index", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["versions"]
    assert sum(v["live"] for v in listed) == 1


def test_size_distribution_is_reported_per_kind(main_run, settings):
    instance = DagsterInstance.get()
    event = instance.get_latest_materialization_event(AssetKey("chunk_size_distribution"))
    metadata = event.asset_materialization.metadata
    assert "data:image/png;base64," in metadata["histogram_image"].value
    # Short enough for the UI to show inline (Markdown under 1,000 characters), a row per kind.
    histogram = metadata["histogram"].value
    assert len(histogram) < 1000 and "|scripture / verse|" in histogram
    granularities = {record.data["granularity"] for record in metadata["distribution"].records}
    assert {"verse", "pericope", "section"} <= granularities


def test_step_output_is_kept_by_the_manager_that_leaves_ctrl_c_to_lectio_run(main_run, settings):
    manager = DagsterInstance.get().compute_log_manager
    assert isinstance(manager, TerminalComputeLogManager)
    kept = Path(manager.get_captured_local_path(["run", "step"], "out"))
    assert kept.is_relative_to(settings.dagster_home / "storage")  # where the UI has read them


def test_materialize_the_asset_graph_for_one_source(settings, tmp_path):
    defs = build_definitions(settings.sources_file)
    graph = defs.resolve_asset_graph()
    assert graph.get(AssetKey("search_index")).parent_keys == {AssetKey("chunks"), AssetKey("embeddings")}
    assert graph.get(AssetKey("embeddings")).parent_keys == {AssetKey("chunks")}
    assert graph.get(AssetKey("chunks")).parent_keys == {AssetKey("parsed_structure")}
    assets = [a for a in defs.assets if a.key.path[0] in ("raw_texts", "parsed_structure", "chunks", "embeddings")]
    resources = dict(defs.resources)
    from dagster import FilesystemIOManager

    resources["io_manager"] = FilesystemIOManager(base_dir=str(tmp_path))
    result = materialize(assets, partition_key="staff-guide", resources=resources)
    assert result.success
    chunks = result.output_for_node("chunks")
    assert set(chunks["acl"].map(tuple)) == {("group:staff",)}
    assert chunks["breadcrumb"].str.startswith("Study Group Leader Guide").all()
    embedded = result.asset_materializations_for_node("embeddings")[0].metadata
    assert embedded["chunks"].value == len(chunks)


def test_hybrid_lexical_and_vector_modes(main_run, conn):
    from lectio.retrieval import SearchConfig

    query = "do not be anxious about anything"
    for mode in ("vector", "lexical", "hybrid"):
        response = search(conn, SearchRequest(query, k=5, config=SearchConfig.from_options(mode=mode)))
        assert response.mode == mode
        assert "phil_4_6" in {ref for r in response.results for ref in r.refs}, mode
    # BM25 weighs the rare word: a query of one rare word finds the chunks that hold it, a
    # paragraph perhaps only in the neighbouring sentences indexed to help find it.
    lexical = search(conn, SearchRequest("Nicodemus", k=5, config=SearchConfig.from_options(mode="lexical"))).results
    table = versions.get_version(conn, versions.live_version(conn)).table_name
    indexed = dict(conn.execute(f"SELECT chunk_id, text FROM {table} WHERE chunk_id = ANY(%s)",
                                [[r.chunk_id for r in lexical]]).fetchall())
    assert lexical and all("Nicodemus" in indexed[r.chunk_id] for r in lexical)
    assert "Nicodemus" in lexical[0].text


def test_parents_replace_children_once(main_run, conn):
    from lectio.retrieval import SearchConfig

    plain = search(conn, SearchRequest("rejoice in the Lord always", k=20)).results
    parents = search(conn, SearchRequest("rejoice in the Lord always", k=20,
                                         config=SearchConfig.from_options(return_parents=True))).results
    assert any(r.granularity == "verse" for r in plain)
    assert not any(r.granularity == "verse" for r in parents)  # every verse has a pericope parent here
    ids = [r.chunk_id for r in parents]
    assert len(ids) == len(set(ids))


def test_a_baseline_ruleset_builds_as_a_candidate_and_is_scored(main_run, settings, conn, fixture_sources,
                                                                foreign_sources):
    import dataclasses

    from lectio.evaluation.metrics import evaluate_index
    from lectio.evaluation.querysets import load_queries

    baseline = fixture_sources.parent / "chapters.yaml"
    baseline.write_text(
        "sources:\n  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb, chunking: chapter,\n"
        "     select: 'Philippians; Romans 5; Romans 8; Psalm 23; John 3', translation: WEB, acl: [public]}\n"
    )
    queries = fixture_sources.parent / "queries.jsonl"
    queries.write_text(
        '{"id": "a", "query": "do not be anxious about anything", "relevant": ["phil_4_6"]}\n'
        '{"id": "b", "query": "God so loved the world", "relevant": ["john_3_16"]}\n'
    )
    loaded = load_queries(queries)
    # Scored first: the baseline's file lists web alone, so applying it revokes the live version.
    structural = evaluate_index(conn, loaded)["overall"]
    live_before = versions.live_version(conn)
    report = run_main(dataclasses.replace(settings, sources_file=baseline), echo=lambda _: None, switch_live=False)
    assert report.index["ok"] and not report.index["live"] and versions.live_version(conn) == live_before
    candidate = report.index["version"]
    assert versions.get_version(conn, candidate).rows == 8  # one chunk per chapter
    chapters = evaluate_index(conn, loaded, version=candidate)["overall"]
    assert chapters["n"] == structural["n"] == 2
    # A chapter covers its every verse, so recall@20 is trivially high; the budget is what it pays.
    assert structural["budget_recall@1000"] >= chapters["budget_recall@1000"]
    assert structural["mrr"] > 0
