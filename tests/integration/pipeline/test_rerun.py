"""A quiet night costs seconds: `lectio run` with nothing changed reads, chunks and embeds
nothing, a change to one source (or to the one ruleset that chunks it) runs that source alone,
and the UI's staleness says the same."""

from __future__ import annotations

import dataclasses
import json

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, RunsFilter

from assets.source_assets import INPUTS_KEY, SOURCE_INPUTS
from lectio.rulesets import registry
from pipelines.dagster_internals import DATA_VERSION_TAG
from tests.dagster_internals import observe, stale_statuses
from pipelines.definitions import build_definitions
from assets.names import INGEST_ASSETS, INGEST_JOB
from tests.integration.trust.test_trust import home, run  # noqa: F401  (the fixture: a small home of its own)

pytestmark = [pytest.mark.slow, pytest.mark.network]


def ingest_runs() -> int:
    return len(DagsterInstance.get().get_run_records(filters=RunsFilter(job_name=INGEST_JOB)))


def test_nothing_changed_nothing_done_and_one_change_reruns_one_source(home):  # noqa: F811
    sources = home.sources("rerun")
    first = run(home, sources)
    assert first.index["ok"] and not first.failed
    before = ingest_runs()

    again = run(home, sources)
    assert ingest_runs() == before  # no source went through ingest
    assert not again.failed and again.index["version"] == first.index["version"] and again.index["live"]
    assert again.index["live_index"] == f"kept {first.index['version']} live (this build's version)"
    assert all(o.facts["embeddings"]["embedded"] == 0 for o in again.sources)
    assert first.model_seconds > 0 and again.model_seconds == 0  # the report's model/other split

    notes = home.folder / "alice.jsonl"
    notes.write_text(notes.read_text() + '{"id": "n-new", "ref": "Psalm 23:1", "text": "A new note."}\n')
    changed = run(home, sources)
    assert ingest_runs() == before + 1  # notes-alice only
    assert changed.index["version"] != first.index["version"] and changed.index["live"]
    by_id = {o.source_id: o for o in changed.sources}
    assert by_id["notes-alice"].facts["embeddings"]["embedded"] >= 1


def test_a_fresh_machines_second_run_reuses_what_its_first_run_fetched(home, tmp_path, monkeypatch):  # noqa: F811
    from pipelines.runners import run_main

    web = ("  - {id: web-fresh, kind: scripture, format: sword-bible, module: engWEB2015eb, translation: WEB,\n"
           "     select: \"Philemon\", acl: [public]}\n")
    sources = home.sources("fresh-machine", extra=web)
    fresh = dataclasses.replace(home.use(sources), corpus_dir=tmp_path / "corpus")  # no module on disk yet
    monkeypatch.setenv("LECTIO_CORPUS_DIR", str(fresh.corpus_dir))  # where the runs read it, as on that machine
    assert registry.input_fingerprints(sources, fresh.corpus_dir)["web-fresh"] is None
    first = run_main(fresh, echo=lambda _: None)
    assert first.index["ok"] and not first.failed
    before = ingest_runs()
    again = run_main(fresh, echo=lambda _: None)
    assert ingest_runs() == before and again.index["version"] == first.index["version"]


def staleness(sources) -> dict[str, str]:
    """What the UI shows for each source's first stage, the one that depends on its inputs (Dagster
    marks a later stage stale once the one before it has been materialized again)."""
    graph = build_definitions(sources).resolve_asset_graph()
    return stale_statuses(DagsterInstance.get(), graph, AssetKey("raw_texts"), ("staff-guide", "notes-alice"))


def observe_sources(sources) -> None:
    """What the UI's "Observe" on source_inputs does."""
    defs = build_definitions(sources)
    (inputs,) = [a for a in defs.assets if a.key == AssetKey(SOURCE_INPUTS)]
    assert observe([inputs], instance=DagsterInstance.get(), resources=defs.resources).success


def test_staleness_follows_each_source_and_only_its_own_ruleset(home, monkeypatch):  # noqa: F811
    sources = home.sources("staleness")
    assert run(home, sources).index["ok"]
    fresh = {"staff-guide": "FRESH", "notes-alice": "FRESH"}
    assert staleness(sources) == fresh

    # An edit to the notes ruleset (its version moves): the notes source alone is stale …
    key = ("notes-jsonl", None)
    edited = dataclasses.replace(registry.FORMATS[key], ruleset=registry.FORMATS[key].ruleset + "+edited")
    monkeypatch.setitem(registry.FORMATS, key, edited)
    observe_sources(sources)
    assert staleness(sources) == {**fresh, "notes-alice": "STALE"}

    # … the next run re-chunks it alone, and both are up to date again.
    before = ingest_runs()
    again = run(home, sources)
    assert ingest_runs() == before + 1 and again.index["ok"]
    assert {o.source_id for o in again.sources if o.stages} == {"notes-alice"}
    assert staleness(sources) == fresh


def materialize_in_the_ui(sources, partition: str) -> str:
    """What the UI's Materialize on a source's ingest assets launches: a run of Dagster's own asset
    job (not lectio's ingest_source), with no tag of lectio's; gives its run id."""
    defs = build_definitions(sources)
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=DagsterInstance.get(), partition_key=partition,
                                    asset_selection=[AssetKey(name) for name in INGEST_ASSETS])
    assert result.success and result.dagster_run.job_name != INGEST_JOB
    return result.run_id


def test_a_source_materialised_in_the_ui_is_skipped_by_the_next_lectio_run(home, monkeypatch, capsys):  # noqa: F811
    """Item 6 of issue 37: unchanged is decided from what raw_texts records in any run."""
    from cli import main as cli

    sources = home.sources("ui-then-cli")
    monkeypatch.setenv("LECTIO_SOURCES", str(sources))  # `--sources` sets it for the process
    assert run(home, sources).index["ok"]
    notes = home.folder / "alice.jsonl"
    notes.write_text(notes.read_text() + '{"id": "n-ui", "ref": "Psalm 46:1", "text": "Written for the UI."}\n')
    ui_run = materialize_in_the_ui(sources, "notes-alice")

    assert cli(["run", "--json", "--sources", str(sources)]) == 0
    report = {s["source_id"]: s for s in json.loads(capsys.readouterr().out)["sources"]}
    assert report["notes-alice"]["reused"] and report["notes-alice"]["run_id"] == ui_run
    assert report["staff-guide"]["reused"]

    guide = home.folder / "staff_guide.md"
    guide.write_text(guide.read_text() + "\n\n## Parking\n\nPark behind the hall.\n")
    assert cli(["run", "--json", "--sources", str(sources)]) == 0
    report = {s["source_id"]: s for s in json.loads(capsys.readouterr().out)["sources"]}
    assert not report["staff-guide"]["reused"] and report["staff-guide"]["stages"]
    assert report["notes-alice"]["reused"] and report["notes-alice"]["run_id"] == ui_run


def test_observe_after_a_run_from_the_current_entry_is_not_unsynced(home):  # noqa: F811
    """Item 5 of issue 37: the entry changed since the last Observe and an ingest run read the new
    one; the next Observe found that same data version, yet the UI said Unsynced. Each ingest run
    observes source_inputs first, so raw_texts records the data version it was read from."""
    sources = home.sources("observed")
    assert run(home, sources).index["ok"]
    observe_sources(sources)
    notes = home.folder / "alice.jsonl"
    notes.write_text(notes.read_text() + '{"id": "n-obs", "ref": "Psalm 121:1", "text": "Read, then observed."}\n')
    instance = DagsterInstance.get()
    assert build_definitions(sources).resolve_job_def(INGEST_JOB).execute_in_process(
        instance=instance, partition_key="notes-alice").success
    observe_sources(sources)  # what the UI's Observe records: the entry as it is now

    assert staleness(sources)["notes-alice"] == "FRESH"
    observed = instance.get_latest_data_version_record(AssetKey(SOURCE_INPUTS), True, "notes-alice")
    read = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("raw_texts"), asset_partitions=["notes-alice"]), limit=1).records[0]
    data_version = observed.event_log_entry.tags[DATA_VERSION_TAG]
    assert read.asset_materialization.metadata[INPUTS_KEY].value == data_version
