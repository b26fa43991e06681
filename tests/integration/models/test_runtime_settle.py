"""A new home measures its embedding runtime only where its sources weigh enough for the
measurement to pay back: a few documents are indexed at once on a provisional runtime that
reproduces fp32, and what the sources weigh counts a chapter `select` by its share."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance

from lectio.embedding import backends, measurement, model, numerics, runtime_choice, runtime_record
from lectio.index import versions
from lectio.rulesets.registry import input_bytes
from lectio.rulesets.scripture import chapter_share
from lectio.sources import load_source
from assets.names import INGEST_ASSETS
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from pipelines.runners import run_main
from tests.conftest import FIXTURES

pytestmark = [pytest.mark.slow, pytest.mark.network]

GUIDE = FIXTURES / "staff_guide.md"
SOURCES = "sources:\n  - {id: guide, kind: document, format: markdown, path: staff_guide.md, acl: [group:staff]}\n"


def _forget_choices():
    for cached in (numerics.requested, runtime_choice._choose, model._configured, model._query_choice):
        cached.cache_clear()


def test_the_fixtures_weigh_less_than_a_measurement_pays_for_and_a_whole_bible_more(fixture_sources, settings,
                                                                                   tmp_path):
    from lectio.readers.changes import fetch_missing_modules

    fetch_missing_modules(fixture_sources, settings.corpus_dir)
    light = input_bytes(fixture_sources, settings.corpus_dir)
    assert 0 < light < runtime_choice.MEASURE_FROM_BYTES
    web = load_source(fixture_sources, "web", settings.corpus_dir)
    assert chapter_share(web) == pytest.approx(8 / 1189)  # Philippians' 4, Romans 5 and 8, Psalm 23, John 3
    # The same sources reading the whole of the WEB: the module's 4 MB count in full.
    whole = tmp_path / "whole.yaml"
    whole.write_text(Path(fixture_sources).read_text().replace('select: "Philippians; Romans 5; Romans 8; Psalm 23; John 3"', ""))
    assert input_bytes(whole, settings.corpus_dir) >= runtime_choice.MEASURE_FROM_BYTES > light
    # A module this machine lacks: not known, so measured as before.
    missing = tmp_path / "missing.yaml"
    missing.write_text("sources:\n  - {id: gone, kind: scripture, format: sword-bible, module: NoSuchModule, acl: [public]}\n")
    assert input_bytes(missing, tmp_path / "empty-corpus") is None


def test_a_light_homes_first_run_measures_nothing_and_indexes_on_the_provisional_runtime(home_factory,
                                                                                        monkeypatch):
    with home_factory("lectio-settle-", lambda: SOURCES, files=[GUIDE]) as home:
        monkeypatch.delenv("LECTIO_EMBED_BACKEND")
        monkeypatch.delenv("LECTIO_EMBED_PRECISION")
        monkeypatch.setattr(measurement, "measure", lambda *a, **k: pytest.fail("a light home measured its runtimes"))
        _forget_choices()
        try:
            report = run_main(home.settings, echo=lambda _: None)
            assert report.index["ok"] and report.index["live"] and not report.failed
            choice = model.ModelChoice()
            record = json.loads((home.settings.home / "models" / f"{choice.name}@{choice.release}"
                                 / runtime_record.CHOICE_FILE).read_text())
            assert record["provisional"]["input_bytes"] == GUIDE.stat().st_size
            assert (record["backend"], record["precision"]) == backends.ORDER[0]
            with home.connect() as conn:
                built = versions.get_version(conn, versions.live_version(conn)).model_id
            assert built == model.ModelChoice(backend=record["backend"], precision=record["precision"]).id
        finally:
            _forget_choices()


def test_a_weight_not_known_before_the_modules_are_fetched_is_weighed_again_after(fixture_sources, settings, tmp_path):
    import shutil

    from lectio.readers.changes import fetch_missing_modules

    fetch_missing_modules(fixture_sources, settings.corpus_dir)
    corpus = tmp_path / "corpus"
    assert input_bytes(fixture_sources, corpus) is None  # no module fetched into this corpus yet
    shutil.copytree(Path(settings.corpus_dir) / "sword", corpus / "sword")  # as fetching puts them there
    assert 0 < input_bytes(fixture_sources, corpus) < runtime_choice.MEASURE_FROM_BYTES


def test_a_new_machines_ui_ingest_measures_nothing_and_the_next_lectio_run_reads_nothing_again(home_factory,
                                                                                                 monkeypatch):
    """Issue 62, item 9: ingested first by the UI (its runs, not `lectio run`, fetch the SWORD
    module), a light home settles on the provisional runtime as `lectio run` would, and records
    every source's inputs, so the next `lectio run` skips each one as unchanged."""
    kjv = ("  - {id: kjv, kind: scripture, format: sword-bible, module: engKJV2006eb, select: Philemon,\n"
           "     translation: KJV, acl: [public]}\n")
    with home_factory("lectio-ui-first-", lambda: SOURCES + kjv, files=[GUIDE]) as home:
        corpus = home.folder.parent / "corpus"  # a new machine: no module fetched yet
        settings = dataclasses.replace(home.settings, corpus_dir=corpus)
        for key in ("LECTIO_EMBED_BACKEND", "LECTIO_EMBED_PRECISION"):
            monkeypatch.delenv(key)
        monkeypatch.setenv("LECTIO_CORPUS_DIR", str(corpus))
        _forget_choices()
        try:
            prepare_dagster_env(settings, home.database)
            ui_runs = {source: _materialize_in_the_ui(settings.sources_file, source) for source in ("guide", "kjv")}
            report = run_main(settings, echo=lambda _: None)
            assert {o.source_id: o.run_id for o in report.sources if o.reused} == ui_runs
            choice = model.ModelChoice()
            record = json.loads(runtime_record.record_file(choice.name, choice.release).read_text())
            assert record.get("provisional", {}).get("input_bytes") == input_bytes(settings.sources_file, corpus)
        finally:
            _forget_choices()


def _materialize_in_the_ui(sources: Path, partition: str) -> str:
    """What the UI's Materialize on a source's ingest assets launches (Dagster's own asset job, no
    tag of lectio's), in this process against the home's instance; gives its run id."""
    result = build_definitions(sources).resolve_implicit_global_asset_job_def().execute_in_process(
        instance=DagsterInstance.get(), partition_key=partition, asset_selection=[AssetKey(n) for n in INGEST_ASSETS])
    assert result.success
    return result.run_id
