"""Schedules and sensors against a real instance: the nightly re-embed, the source-change sensor,
the index after a batch, a backfill over partitions, and the failed-run alert."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRunStatus,
    build_schedule_context,
    build_sensor_context,
    materialize,
)

from assets.index import IndexConfig
from pipelines.batches import index_cursor
from pipelines.dagster_internals import BulkActionStatus
from tests.dagster_internals import PartitionBackfill
from pipelines.definitions import build_definitions
from assets.names import BATCH_TAG, INDEX_JOB, INGEST_ASSETS, INGEST_JOB
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROJECT = Path(__file__).resolve().parents[3]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


def _watched_corpus(folder: Path) -> Path:
    """A small sources file of our own: two file sources and one SWORD module (already fetched
    into the shared corpus), with ids no other test uses."""
    shutil.copy(FIXTURES / "staff_guide.md", folder / "guide.md")
    (folder / "notes").mkdir()
    shutil.copy(FIXTURES / "notes" / "alice.jsonl", folder / "notes" / "alice.jsonl")
    (folder / "rota.txt").write_text("Volunteer rota\n\nSunday: tea and coffee after the service.\n")
    sources = folder / "sources.yaml"
    sources.write_text(
        "sources:\n"
        "  - {id: watch-guide, kind: document, format: markdown, path: guide.md, acl: ['group:staff']}\n"
        "  - {id: watch-notes, kind: notes, format: notes-jsonl, path: notes/alice.jsonl, acl: ['user:alice']}\n"
        "  - {id: watch-rota, kind: document, format: text, path: rota.txt, acl: [public]}\n"
        "  - {id: watch-kjv, kind: scripture, format: sword-bible, module: engKJV2006eb, select: 'Philippians 4',\n"
        "     translation: KJV, acl: [public]}\n"
    )
    return sources


def _sensor_tick(defs, name, instance, cursor=None):
    sensor = defs.resolve_sensor_def(name)
    return sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=defs.resources))


def test_nightly_run_with_nothing_changed_embeds_nothing(main_run, settings, instance):
    """The schedule asks for every source; with nothing changed every ingest run embeds zero
    chunks, and the index sensor then reuses the live index version."""
    # The sensor's cursor as of now: runs other test files left in this session's instance are
    # not this night's.
    since = index_cursor(time.time())
    defs = build_definitions(settings.sources_file)
    schedule = defs.resolve_schedule_def("nightly_reembed")
    night = datetime(2026, 11, 30, 2, 0, tzinfo=timezone.utc)
    context = build_schedule_context(instance=instance, scheduled_execution_time=night, repository_def=defs.get_repository_def())
    requests = schedule.evaluate_tick(context).run_requests
    assert sorted(r.partition_key for r in requests) == sorted(s.source_id for s in main_run.sources)
    assert {r.tags[BATCH_TAG] for r in requests} == {"nightly-2026-11-30"}

    ingest = defs.resolve_job_def(INGEST_JOB)
    embedded = {}
    for request in requests:  # what the daemon would launch, run in process
        result = ingest.execute_in_process(
            run_config=QUIET, instance=instance, partition_key=request.partition_key, tags=request.tags
        )
        metadata = result.asset_materializations_for_node("embeddings")[0].metadata
        embedded[request.partition_key] = (metadata["embedded"].value, metadata["reused_from_cache"].value)
    assert all(new == 0 for new, _ in embedded.values()), embedded
    assert all(reused > 0 for _, reused in embedded.values())

    # Every run of the batch finished: the sensor requests the index, with no failed sources.
    tick = _sensor_tick(defs, "index_after_batch", instance, since)
    (request,) = tick.run_requests
    assert request.tags["lectio/after_batches"] == "nightly-2026-11-30"
    config = request.run_config["ops"]["search_index"]["config"]
    # No failed source, switched live, and the lock taken by the build itself (not lectio run's).
    assert IndexConfig(**config) == IndexConfig(failed_sources=[], switch_live=True)
    index = defs.resolve_job_def(INDEX_JOB).execute_in_process(
        run_config={**QUIET, **request.run_config}, instance=instance, tags=request.tags
    )
    built = index.asset_materializations_for_node("search_index")[0].metadata
    assert built["reused_existing_version"].value and built["version"].value == main_run.index["version"]
    # The batch is indexed once: the next tick asks for nothing.
    assert not _sensor_tick(defs, "index_after_batch", instance, tick.cursor).run_requests


def test_a_changed_source_requests_exactly_its_partition(instance, tmp_path):
    sources = _watched_corpus(tmp_path)
    defs = build_definitions(sources)
    first = _sensor_tick(defs, "source_changes", instance)
    assert not first.run_requests  # the first look records each source's fingerprint
    # … and observes it as the source's data version, which the UI's staleness follows.
    assert {e.partition for e in first.asset_events} == {"watch-guide", "watch-notes", "watch-rota", "watch-kjv"}
    assert set(json.loads(first.cursor)["fingerprints"]) == {"watch-guide", "watch-notes", "watch-rota", "watch-kjv"}
    assert not _sensor_tick(defs, "source_changes", instance, first.cursor).run_requests

    guide = tmp_path / "guide.md"
    guide.write_text(guide.read_text() + "\n## Closing\n\nEnd on time, with a short prayer.\n")
    changed = _sensor_tick(defs, "source_changes", instance, first.cursor)
    assert [r.partition_key for r in changed.run_requests] == ["watch-guide"]
    assert [e.partition for e in changed.asset_events] == ["watch-guide"]
    (request,) = changed.run_requests
    assert request.tags[BATCH_TAG].startswith("changed-") and request.tags["lectio/batch_size"] == "1"
    # The same tick evaluated again (its cursor lost) asks for the same run key: Dagster runs it once.
    again = _sensor_tick(defs, "source_changes", instance, first.cursor)
    assert [r.run_key for r in again.run_requests] == [request.run_key]
    assert not _sensor_tick(defs, "source_changes", instance, changed.cursor).run_requests

    # An entry change counts too: a wider ACL must re-chunk the source.
    sources.write_text(sources.read_text().replace("acl: ['user:alice']", "acl: ['user:alice', 'group:staff']"))
    widened = _sensor_tick(defs, "source_changes", instance, changed.cursor)
    assert [r.partition_key for r in widened.run_requests] == ["watch-notes"]

    # Changing back to an earlier content is a change again, with a run key of its own.
    sources.write_text(sources.read_text().replace("acl: ['user:alice', 'group:staff']", "acl: ['user:alice']"))
    back = _sensor_tick(defs, "source_changes", instance, widened.cursor)
    assert [r.partition_key for r in back.run_requests] == ["watch-notes"]
    assert back.run_requests[0].run_key != widened.run_requests[0].run_key


def test_fingerprints_never_fetch_a_module(tmp_path):
    """A SWORD module not downloaded yet has no fingerprint (the sensor waits for a run to fetch
    it) instead of the sensor downloading it; file sources hash their files."""
    from lectio.rulesets.registry import input_fingerprints

    sources = _watched_corpus(tmp_path)
    empty_corpus = tmp_path / "no-corpus"
    prints = input_fingerprints(sources, empty_corpus)
    assert prints["watch-kjv"] is None and not empty_corpus.exists()
    assert all(prints[k] for k in ("watch-guide", "watch-notes", "watch-rota"))
    shared = input_fingerprints(sources, Path(os.environ["LECTIO_CORPUS_DIR"]))
    assert shared["watch-kjv"] and shared["watch-guide"] == prints["watch-guide"]


def test_backfill_over_source_partitions(instance, settings, tmp_path):
    """What a backfill over all sources does (after a rule change), one partition per run."""
    sources = _watched_corpus(tmp_path)
    defs = build_definitions(sources)
    source_assets = [a for a in defs.assets if a.key.path[0] in ("raw_texts", "parsed_structure", "chunks", "embeddings")]
    keys = ["watch-guide", "watch-rota", "watch-kjv"]
    for key in keys:
        result = materialize(source_assets, partition_key=key, instance=instance, resources=defs.resources)
        assert result.success
        assert result.output_for_node("chunks")["source_id"].eq(key).all()
    materialized = instance.get_materialized_partitions(AssetKey("chunks"))
    assert set(keys) <= materialized and "watch-notes" not in materialized


def test_failed_run_alerts_through_the_sensor(instance, tmp_path, monkeypatch):
    log_file = tmp_path / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(log_file))
    monkeypatch.setenv("LECTIO_UI_URL", "http://dagster.test")
    sources = _watched_corpus(tmp_path)
    # A file that cannot be read as text fails raw_texts itself (a missing file is the
    # source_entry check's, which alerts as a check and fails no run).
    (tmp_path / "latin1.txt").write_bytes("Caf\xe9 rota\n".encode("latin-1"))
    sources.write_text(sources.read_text() + "  - {id: watch-gone, kind: document, format: text, path: latin1.txt, acl: [public]}\n")
    defs = build_definitions(sources)
    start = _sensor_tick(defs, "alert_on_failed_runs", instance).cursor  # first tick: watch from now

    failed = defs.resolve_job_def(INGEST_JOB).execute_in_process(
        run_config=QUIET, instance=instance, partition_key="watch-gone", raise_on_error=False
    )
    assert not failed.success
    after = _sensor_tick(defs, "alert_on_failed_runs", instance, start)
    _sensor_tick(defs, "alert_on_failed_runs", instance, start)  # the same failure, ticked again
    _sensor_tick(defs, "alert_on_failed_runs", instance, after.cursor)

    alerts = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert len(alerts) == 1
    alert = alerts[0]
    assert alert["kind"] == "run_failed" and alert["job"] == INGEST_JOB
    assert alert["partition"] == "watch-gone" and alert["asset"] == "raw_texts"
    assert "latin1.txt is not valid UTF-8" in alert["message"]
    assert alert["run_url"] == f"http://dagster.test/runs/{failed.run_id}"
    assert alert["title"] == "lectio: job ingest_source failed for source watch-gone at raw_texts"


def test_definitions_validate_with_schedules_and_sensors(settings):
    defs = build_definitions(settings.sources_file)
    assert {s.name for s in defs.schedules} == {"nightly_reembed"}
    assert {"source_changes", "index_after_batch", "alert_on_failed_checks", "alert_on_failed_runs"} <= {
        s.name for s in defs.sensors
    }
    # The CLI as the operator runs it, against this test's home and sources.
    done = subprocess.run(
        [sys.executable, "-m", "cli", "dagster", "definitions", "validate"],
        cwd=PROJECT, env=dict(os.environ), capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "All code locations passed validation" in done.stderr + done.stdout


def test_a_killed_run_does_not_hold_its_batch_forever(instance, settings, monkeypatch):
    """A run whose worker was killed stays STARTED; the index waits for it only until it is
    stale, then treats its source as failed. Dagster's run monitoring is on for the daemon."""
    from pipelines import batches
    from assets.names import BATCH_SIZE_TAG

    assert instance.run_monitoring_enabled
    since = index_cursor(time.time())
    defs = build_definitions(settings.sources_file)
    batch = f"killed-{time.time_ns()}"
    job = defs.resolve_job_def(INGEST_JOB)
    run = instance.create_run_for_job(job_def=job, status=DagsterRunStatus.STARTED,
                                      tags={BATCH_TAG: batch, BATCH_SIZE_TAG: "1", "dagster/partition": "web"})
    try:
        tick = _sensor_tick(defs, "index_after_batch", instance, since)
        assert not tick.run_requests and "1 ingest run(s)" in tick.skip_message
        monkeypatch.setattr(batches, "STALE_RUN_SECONDS", 0)
        (request,) = _sensor_tick(defs, "index_after_batch", instance, since).run_requests
        assert request.tags["lectio/after_batches"] == batch
        assert request.run_config["ops"]["search_index"]["config"]["failed_sources"] == ["web"]
    finally:
        instance.delete_run(run.run_id)  # a STARTED run left behind would hold later tests' index


def test_an_untagged_run_is_indexed_once_no_ingest_is_in_progress(instance, tmp_path):
    """A run launched from the UI carries no batch tag: the index follows it all the same, once
    no other ingest run is queued or running."""
    since = index_cursor(time.time())
    defs = build_definitions(_watched_corpus(tmp_path))
    ingest = defs.resolve_job_def(INGEST_JOB)
    running = instance.create_run_for_job(job_def=ingest, status=DagsterRunStatus.STARTED,
                                          tags={"dagster/partition": "watch-guide"})
    ui_run = ingest.execute_in_process(run_config=QUIET, instance=instance, partition_key="watch-rota")
    assert ui_run.success
    waiting = _sensor_tick(defs, "index_after_batch", instance, since)
    assert not waiting.run_requests and waiting.skip_message == "waiting for 1 ingest run(s) to finish"

    # The other run fails before any step of it ran (it changed nothing): it is no batch's, and the
    # index follows the UI's run alone.
    instance.report_run_failed(instance.get_run_by_id(running.run_id))
    tick = _sensor_tick(defs, "index_after_batch", instance, since)
    (request,) = tick.run_requests
    assert IndexConfig(**request.run_config["ops"]["search_index"]["config"]) == IndexConfig()
    assert request.tags["lectio/after_runs"] == "1"
    assert request.tags["lectio/after_batches"] == f"run-{ui_run.run_id[:8]}"
    # Indexed once: the next tick, from the cursor this one left, asks for nothing.
    again = _sensor_tick(defs, "index_after_batch", instance, tick.cursor)
    assert not again.run_requests and again.skip_message == (
        "1 ingest run(s) since the last index failed before any step ran, so nothing changed: no index asked for")


def test_a_run_whose_requested_index_run_was_deleted_is_indexed_by_the_sensor(instance, tmp_path):
    """An ingest run that queued its batch's index itself (request_index_now) is tagged with that
    run, and the sensor leaves it alone; once that index run is deleted (the UI's run list offers
    it), the sensor asks for the batch's index again rather than leaving it never indexed."""
    from assets.names import INDEX_REQUESTED_TAG

    since = index_cursor(time.time())
    defs = build_definitions(_watched_corpus(tmp_path))
    # What request_index_now leaves: the index run queued as the ingest run's last step ends (so
    # created before the ingest run ends), and the ingest run tagged with it.
    queued = instance.create_run_for_job(job_def=defs.resolve_job_def(INDEX_JOB), status=DagsterRunStatus.NOT_STARTED)
    ui_run = defs.resolve_job_def(INGEST_JOB).execute_in_process(run_config=QUIET, instance=instance,
                                                                 partition_key="watch-rota")
    assert ui_run.success
    instance.add_run_tags(ui_run.run_id, {INDEX_REQUESTED_TAG: queued.run_id})
    asked = _sensor_tick(defs, "index_after_batch", instance, since)
    assert not asked.run_requests and asked.skip_message == "no ingest run finished since the last index"

    instance.delete_run(queued.run_id)
    (request,) = _sensor_tick(defs, "index_after_batch", instance, since).run_requests
    assert request.tags["lectio/after_batches"] == f"run-{ui_run.run_id[:8]}"


def test_a_backfill_is_indexed_once_it_completes(instance, tmp_path):
    """An asset backfill over the ingest assets, as the UI launches it: while it is open (it may
    not have launched every partition yet) the index waits, even with all its runs finished."""
    since = index_cursor(time.time())
    sources = _watched_corpus(tmp_path)
    sources.write_text(sources.read_text() + "  - {id: watch-gone, kind: document, format: text, path: gone.txt, acl: [public]}\n")
    defs = build_definitions(sources)
    keys = ["watch-rota", "watch-gone"]
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=f"bf{time.time_ns() % 10**8}", asset_graph=defs.get_repository_def().asset_graph,
        partition_names=keys, asset_selection=[AssetKey(name) for name in INGEST_ASSETS],
        backfill_timestamp=time.time(), tags={}, dynamic_partitions_store=instance, all_partitions=False,
        title=None, description=None, run_config=None,
    )
    instance.add_backfill(backfill)
    ingest = defs.resolve_job_def(INGEST_JOB)
    for key in keys:  # the runs the backfill daemon launches, run in process
        ingest.execute_in_process(run_config=QUIET, instance=instance, partition_key=key, raise_on_error=False,
                                  tags={"dagster/backfill": backfill.backfill_id})
        waiting = _sensor_tick(defs, "index_after_batch", instance, since)
        assert not waiting.run_requests and waiting.skip_message == "waiting for 1 backfill(s) to finish"

    instance.update_backfill(backfill.with_status(BulkActionStatus.COMPLETED_FAILED))
    (request,) = _sensor_tick(defs, "index_after_batch", instance, since).run_requests
    assert request.run_config["ops"]["search_index"]["config"]["failed_sources"] == ["watch-gone"]
    assert request.tags["lectio/after_batches"] == f"backfill-{backfill.backfill_id}"


def test_an_alert_tick_says_what_it_alerted_on():
    """A tick that sent alerts requests no runs; its message names each check, source and run."""
    from lectio.alerts import Alert
    from pipelines.sensors.alert_on_failed_checks import alert_summary

    alert = Alert(kind="check_failed", message="dropped", run_id="r1", run_url="http://x/runs/r1",
                  asset="chunks", check="chunk_count", partition="notes-alice")
    assert alert_summary([alert]) == "1 alert: chunk_count on notes-alice, run r1"
    assert alert_summary([]) == "no alert"


def test_an_index_build_launched_from_the_ui_takes_the_writer_lock(main_run, settings, instance, database):
    """A build_index run as the UI, a sensor or the CLI launches it is refused while another
    writer holds the database; only the process that holds the lock itself (lectio run, lectio
    migrate) builds under it. The other writer's session takes the lock as a separate process
    would: this process's writer_lock would rightly let its own build through."""
    from lectio.index import locks

    job = build_definitions(settings.sources_file).resolve_job_def(INDEX_JOB)
    with database.connect() as writing:
        assert writing.execute("SELECT pg_try_advisory_lock(%s)", (locks._WRITER_LOCK,)).fetchone()[0]
        busy = job.execute_in_process(run_config=QUIET, instance=instance, raise_on_error=False)
    assert not busy.success
    (failure,) = [e for e in busy.all_events if e.is_step_failure]
    error = failure.step_failure_data.error
    while error.cause is not None:
        error = error.cause
    assert failure.step_key == "search_index" and error.cls_name == "WriterBusy"
    assert "this index build was not started" in error.message
