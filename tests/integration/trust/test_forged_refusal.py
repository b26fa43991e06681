"""A run tag does not make a run refused (trust gap in the run-failure alert and the batch).

lectio tags a run it refuses at its first step (a partial ingest, incidental training) with
`lectio/refused`, and the run-failure alert and index_after_batch's batch left every run so tagged
alone. A launch may carry any tag, and Dagster copies a launch's tags onto its run: a UI user who
added that tag silenced the alert for the run's real failure, and left a real ingest out of its
batch's index. A run counts as refused only where its own events show lectio's refusal."""

from __future__ import annotations

import time

import pytest
from dagster import AssetKey, DagsterInstance, build_sensor_context

from assets.names import INDEX_JOB, INGEST_JOB, MIGRATE_JOB, REFUSED_TAG
from pipelines.batches import index_cursor
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# What the launchpad's tag editor lets anyone add, the very value lectio's own refusal writes.
FORGED = {REFUSED_TAG: f"run the job {INGEST_JOB} instead"}


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


@pytest.fixture()
def alert_log(monkeypatch, tmp_path):
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(tmp_path / "alerts.jsonl"))
    return tmp_path / "alerts.jsonl"


def _tick(defs, name, instance, cursor=None):
    return defs.resolve_sensor_def(name).evaluate_tick(build_sensor_context(
        instance=instance, cursor=cursor, definitions=defs, resources=defs.resources))


def test_a_forged_refused_tag_does_not_silence_a_real_failure(instance, settings, alert_log):
    defs = build_definitions(settings.sources_file)
    start = _tick(defs, "alert_on_failed_runs", instance).cursor  # watching failed runs from now on
    # A real failure of lectio's own, whose line even begins "refused:": a migration launched with
    # the gate loosened, and the refused tag added at launch.
    loosened = {**QUIET, "ops": {"live_index": {"config": {"tolerances": {}}}}}
    run = defs.resolve_job_def(MIGRATE_JOB).execute_in_process(instance=instance, run_config=loosened, tags=FORGED,
                                                                raise_on_error=False)
    assert not run.success and instance.get_run_by_id(run.run_id).tags[REFUSED_TAG] == FORGED[REFUSED_TAG]

    tick = _tick(defs, "alert_on_failed_runs", instance, start)
    assert tick.skip_message.startswith("alerted: "), tick.skip_message
    assert run.run_id in alert_log.read_text() and "tolerances" in alert_log.read_text()


def test_a_refusal_of_lectio_itself_still_pages_nobody(instance, settings, alert_log):
    defs = build_definitions(settings.sources_file)
    start = _tick(defs, "alert_on_failed_runs", instance).cursor
    # The UI's Materialize on a raw_texts partition alone: refused at its first step.
    run = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, partition_key="notes-alice", asset_selection=[AssetKey("raw_texts")], run_config=QUIET,
        raise_on_error=False)
    assert not run.success

    # Refused before any step succeeded, it ends Canceled (assets.refusals): no failure to alert on.
    tick = _tick(defs, "alert_on_failed_runs", instance, start)
    assert run.run_id[:8] not in (tick.skip_message or ""), tick.skip_message
    assert not alert_log.exists()


def test_a_forged_refused_tag_does_not_leave_an_ingest_out_of_its_batch(instance, settings, monkeypatch):
    # torch: the ONNX export of the session's model is no part of this test.
    monkeypatch.setenv("LECTIO_EMBED_BACKEND", "torch")
    defs = build_definitions(settings.sources_file)
    since = index_cursor(time.time())
    ingest = defs.resolve_job_def(INGEST_JOB).execute_in_process(instance=instance, partition_key="notes-alice",
                                                                 run_config=QUIET, tags=FORGED)
    assert ingest.success  # read, chunked and embedded: an ingest like any other

    (request,) = _tick(defs, "index_after_batch", instance, since).run_requests
    assert request.job_name == INDEX_JOB and request.tags["lectio/after_batches"] == f"run-{ingest.run_id[:8]}"
