"""A partial ingest is refused at its start, and the documented path ends searchable (issue 62, item 1).

docs/ui.md had a source materialized by its `raw_texts` partition alone, docs/operations.md by
"Materialize all" on the `ingest` group: neither reaches `embeddings`. The next index build then
called the source failed ("its entry or file changed after its last ingest"), kept its old chunks
and alerted, though the run had succeeded and the file had not changed. Now such a run fails at its
first step, before anything is read, in one line naming the job to run; no batch counts it and no
alert pages the team; and the job it names ends with the new text live. A source left behind by a
partial run made before the fix is named for what happened to it."""

from __future__ import annotations

import json
import time

import pytest
from dagster import (AssetCheckKey, AssetKey, AssetMaterialization, AssetRecordsFilter, DagsterEventType, DagsterInstance,
                     DagsterRunStatus, build_sensor_context)

from assets.checks import BLOCKING_CHUNK_CHECKS, OTHER_CHUNK_CHECKS
from assets.entry_check import ENTRY_CHECK
from assets.index import SOURCES_CHECK
from assets.source_assets import PARSE_CHECK
from assets.names import INDEX_JOB, INGEST_JOB, REFUSED_TAG
from lectio.index import versions
from pipelines.batches import index_cursor
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from tests.dagster_internals import check_status

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# What the UI launches: Materialize on the raw_texts partition; Materialize all on the `ingest` group.
RAW_TEXTS = ["raw_texts"]
INGEST_GROUP = ["raw_texts", "parsed_structure", "chunks"]
# Every check of the ingest assets: the run of a selection plans those of the assets it takes.
INGEST_CHECKS = [AssetCheckKey(AssetKey("raw_texts"), ENTRY_CHECK), AssetCheckKey(AssetKey("parsed_structure"), PARSE_CHECK),
                 *(AssetCheckKey(AssetKey("chunks"), name) for name in (*BLOCKING_CHUNK_CHECKS, *OTHER_CHUNK_CHECKS))]


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-partial-ingest-home-") as home:
        from pipelines.runners import run_main

        assert run_main(home.settings, echo=lambda _: None).index["live"]
        prepare_dagster_env(home.settings, home.database)
        yield home


def _tick(defs, name: str, cursor=None):
    return defs.resolve_sensor_def(name).evaluate_tick(build_sensor_context(
        instance=DagsterInstance.get(), cursor=cursor, definitions=defs, resources=defs.resources))


def _live_texts(home, source_id: str) -> list[str]:
    with home.connect() as conn:
        table = versions.get_version(conn).table_name
        return [row[0] for row in conn.execute(f'SELECT text FROM "{table}" WHERE source_id = %s', (source_id,))]


def _sources_check(result):
    (evaluation,) = [e.event_specific_data for e in result.all_events if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
                     and e.event_specific_data.check_name == SOURCES_CHECK]
    return evaluation


@pytest.mark.parametrize("selection", [RAW_TEXTS, INGEST_GROUP], ids=["raw_texts partition", "ingest group"])
def test_a_partial_ingest_is_refused_and_the_job_it_names_ends_searchable(home, monkeypatch, selection):
    words = f"Sunday: the {'-'.join(selection)} rota is on the board."
    (home.folder / "rota.txt").write_text(f"Volunteer rota\n\n{words}\n")
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(home.folder / "alerts.jsonl"))
    instance = DagsterInstance.get()
    defs = build_definitions(home.settings.sources_file)
    since = index_cursor(time.time())
    failures = _tick(defs, "alert_on_failed_runs").cursor  # watching failed runs from now on

    partial = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, partition_key="rota", asset_selection=[AssetKey(name) for name in selection],
        run_config=QUIET, raise_on_error=False)

    # Refused at its first step, in one line naming the job to run; nothing was read.
    assert not partial.success
    (failure,) = [e for e in partial.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.message.strip()
    assert failure.step_key == "raw_texts" and "refused" in message and f"the job {INGEST_JOB}" in message
    assert "embeddings" in message and len(message.splitlines()) == 1, message
    assert not partial.asset_materializations_for_node("raw_texts")
    refused = instance.get_run_by_id(partial.run_id)
    assert refused.tags[REFUSED_TAG] == f"run the job {INGEST_JOB} instead"
    # Not one check reads failed for it (the walk of issue 62, D1: Dagster shows every check a failed
    # run planned as "Execution failed", and all eight read Failed though none ran and nothing was
    # wrong). The run ends Canceled, and the checks it planned read skipped; each check page keeps
    # its last real evaluation.
    shown = {key.name: check_status(instance, key, "rota") for key in INGEST_CHECKS}
    assert not [name for name, (_, status) in shown.items() if status == "EXECUTION_FAILED"], shown
    assert {name: status for name, (run_id, status) in shown.items() if run_id == partial.run_id} \
        == {name: "SKIPPED" for name, (run_id, _) in shown.items() if run_id == partial.run_id}, shown
    assert shown[ENTRY_CHECK][0] == partial.run_id, shown  # planned, and skipped
    assert refused.status == DagsterRunStatus.CANCELED
    # No batch counts it (no index run, no source called failed), and no alert pages the team.
    assert _tick(defs, "index_after_batch", since).skip_message == "no ingest run finished since the last index"
    tick = _tick(defs, "alert_on_failed_runs", failures)
    assert partial.run_id[:8] not in (tick.skip_message or ""), tick.skip_message
    assert not (home.folder / "alerts.jsonl").exists()

    # The job it names: the sensor's index then takes the new text live, every source indexed.
    ingest = defs.resolve_job_def(INGEST_JOB).execute_in_process(instance=instance, partition_key="rota",
                                                                 run_config=QUIET)
    assert ingest.success
    (request,) = _tick(defs, "index_after_batch", since).run_requests
    assert request.job_name == INDEX_JOB and request.run_config["ops"]["search_index"]["config"]["failed_sources"] == []
    built = defs.resolve_job_def(INDEX_JOB).execute_in_process(
        instance=instance, run_config={**QUIET, **request.run_config}, tags=request.tags)
    assert built.output_for_node("search_index")["live"] and _sources_check(built).passed
    assert any(words in text for text in _live_texts(home, "rota"))


def test_a_source_left_behind_by_a_partial_run_is_named_for_what_happened(home):
    """A raw_texts read of an unchanged file, newer than the source's chunks and embeddings (what a
    partial run made before it was refused left): the build names that, and the job to run, rather
    than a changed file and a failed ingest."""
    instance = DagsterInstance.get()
    settings = home.settings
    # What a read of the unchanged file records: the inputs its last read recorded.
    (last,) = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("raw_texts"),
                                                                 asset_partitions=["guide"]), limit=1).records
    inputs = last.asset_materialization.metadata["inputs"].value
    instance.report_runless_asset_event(AssetMaterialization("raw_texts", partition="guide", metadata={"inputs": inputs}))

    defs = build_definitions(settings.sources_file)
    built = defs.resolve_job_def(INDEX_JOB).execute_in_process(instance=instance, run_config=QUIET)
    check = _sources_check(built)
    assert not check.passed
    assert ("guide: raw_texts was materialized again without parsed_structure, chunks, embeddings, so its stored "
            "chunks and embeddings are older than its raw_texts; materialize it with the job ingest_source") \
        in check.description, check.description
    assert "changed" not in check.description, check.description

    # The job it names puts it right.
    assert defs.resolve_job_def(INGEST_JOB).execute_in_process(instance=instance, partition_key="guide",
                                                               run_config=QUIET).success
    again = defs.resolve_job_def(INDEX_JOB).execute_in_process(instance=instance, run_config=QUIET)
    assert _sources_check(again).passed, _sources_check(again).description


def test_the_refusal_names_the_first_stage_selected_and_what_it_lacks():
    from assets.source_assets import partial_ingest

    assert partial_ingest({"raw_texts", "parsed_structure", "chunks", "embeddings"}, "raw_texts", "web") is None
    assert partial_ingest({"chunks", "embeddings"}, "chunks", "web") is None
    line = partial_ingest({"parsed_structure"}, "parsed_structure", "web")
    assert line.startswith("refused: this run materializes parsed_structure of source 'web' without chunks, embeddings")
    assert json.dumps(line).count("\\n") == 0
