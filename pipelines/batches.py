"""Which index a batch of ingest runs asks for, and when: the rule the `index_after_batch` sensor
ticks on, and the same rule asked by an ingest run itself as it ends (request_index_now, handed to
the `embeddings` asset as its `index_requests` resource), so a source launched from the UI is
searchable without waiting for the sensor daemon's next pass.

A batch is every ingest run that finished since the last index, however it was started (the UI, a
backfill, the schedule, the source-change sensor). Its index is asked for once no ingest run is
queued or running and no backfill of ingest assets is open: one `build_index` run, told which of
those sources failed; or, where the runs were tagged with a model (assets.names.MODEL_TAG), one
`migrate_index` run that builds the candidate with that model and gates it."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import datetime, timezone
from typing import Callable

from dagster import AssetKey, DagsterEventType, DagsterRunStatus, RunConfig, RunRequest, RunsFilter

from assets.index import IndexConfig
from assets.names import (AWAITS_GATE_TAG, BATCH_SIZE_TAG, BATCH_TAG, COMMANDS, GATE_JOB, INDEX_JOB, INDEX_REQUESTED_TAG,
                          INGEST_ASSETS, INGEST_JOB, LAUNCHED_BY_TAG, MIGRATE_JOB, MODEL_TAG, STAGE_TAG)
from assets.refusals import refusal
from assets.source_assets import entry_failure
from lectio.evaluation.migration_gate import MODEL_TOLERANCES
from lectio.index import locks
from pipelines.dagster_internals import (REPOSITORY_LABEL_TAG, BulkActionsFilter, BulkActionStatus, JobPythonOrigin,
                                         RemoteInstigatorOrigin, RemoteJobOrigin)
from pipelines.run_owners import OWNER_PID_TAG, executed_by_live_process

INDEX_SENSOR = "index_after_batch"
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
NOT_FINISHED = [s for s in DagsterRunStatus if s not in FINISHED and s != DagsterRunStatus.MANAGED]
OPEN_BACKFILLS = [BulkActionStatus.REQUESTED, BulkActionStatus.CANCELING, BulkActionStatus.FAILING]
INGEST_KEYS = {AssetKey(name) for name in INGEST_ASSETS}
# A run still "started" this long after its last status change has lost its worker (killed,
# its machine gone): the batch goes on without it, as if it had failed. When the daemon runs,
# fail_orphaned_runs fails those of a killed `lectio run` within a minute and Dagster's run monitoring
# (dagster.yaml) any run past 4 h; this covers a daemon that did not.
# Longer than the slowest ingest run (the full WEB, cold, about an hour on 2 cores).
STALE_RUN_SECONDS = 4 * 3600


def batch_index(instance, cursor: str | None, writer_held: Callable[[], bool], ending=None) -> tuple[RunRequest, str] | str:
    """The index run the batch asks for now, with the sensor's next cursor; or, in words, why
    none. `writer_held`: whether the database's writer lock is held now (asked only where a
    command's run is the newest). `ending`: the ingest run that asks as its last step ends (still
    STARTED; it succeeded)."""
    if command := _command_in_progress(instance, writer_held):
        return f"{command} is running and builds its own index: its runs are not a batch"
    # Nothing while a source is still being ingested: the index would miss it, and a backfill
    # still launching its runs is not done either.
    if busy := _ingest_in_progress(instance, ending):
        return f"waiting for {busy} to finish"
    since = max(_cursor_time(cursor), _last_index_start(instance))
    records = _ingest_runs_since(instance, since)
    unstarted = [r for r in records if _failed_unstarted(instance, r.dagster_run)]
    records = [r for r in records if r not in unstarted]
    if not records and ending is None:
        return (f"{len(unstarted)} ingest run(s) since the last index failed before any step ran, so nothing "
                "changed: no index asked for" if unstarted else "no ingest run finished since the last index")
    runs = [r.dagster_run for r in records] + ([ending] if ending is not None else [])
    failed = _failed_partitions(instance, records, ending)
    labels = sorted({_batch_label(run) for run in runs})
    key = "index:" + hashlib.sha256("+".join(sorted(run.run_id for run in runs)).encode()).hexdigest()[:16]
    tags = {STAGE_TAG: "index", "lectio/after_batches": ",".join(labels)[:200], "lectio/after_runs": str(len(runs))}
    # The batch's index follows its latest intent: the run that ends it, else the newest run.
    model = (ending.tags if ending is not None else _newest(records).dagster_run.tags).get(MODEL_TAG) or None
    through = max([r.update_timestamp.timestamp() for r in records] or [time.time()])
    return _index_request(key, failed, tags, model), index_cursor(through)


def gate_request(instance) -> RunRequest | None:
    """The gate for the version the newest build_index run held back because the chunking rules
    changed (AWAITS_GATE_TAG), where no gate or migration has started since; None otherwise. Not
    for a build of `lectio run`, which gates its own version in process."""
    (newest,) = instance.get_run_records(filters=RunsFilter(job_name=INDEX_JOB), limit=1) or (None,)
    build = newest.dagster_run if newest is not None else None
    if build is None or AWAITS_GATE_TAG not in build.tags or build.tags.get(LAUNCHED_BY_TAG) in COMMANDS:
        return None
    after = RunsFilter(job_name=GATE_JOB, created_after=newest.create_timestamp)
    if build.status != DagsterRunStatus.SUCCESS or instance.get_run_records(filters=after, limit=1):
        return None
    version = build.tags[AWAITS_GATE_TAG]
    return RunRequest(run_key=f"gate:{build.run_id}", job_name=GATE_JOB, tags={"lectio/gates": version},
                      run_config={"ops": {"index_evaluation": {"config": {"candidate": version}}}})


def request_index_now(context, database) -> str | None:
    """Asked by an ingest run as its last step ends (the `embeddings` asset's `index_requests`
    resource): where the run came through the run queue (the UI, a backfill, the schedule or a
    sensor), `index_after_batch` is on and this run ends its batch, the batch's index run is
    created and queued now, rather than at the sensor daemon's next pass (it comes round every
    5 s, most of a small source's time to searchable). This run is tagged with it, so the sensor
    does not ask again. Anything else is left to the sensor, and so is a failure here: it is
    logged and fails nothing. The index run's id, or None."""
    try:
        index_run = _request_index_now(context, database)
    except Exception as exc:  # noqa: BLE001 - the sensor's next pass asks for the index instead
        context.log.warning(f"the index is left to the index_after_batch sensor: {exc}")
        return None
    if index_run:
        context.log.info(f"this run ends its batch: index run {index_run} queued")
    return index_run


def _request_index_now(context, database) -> str | None:
    instance, run = context.instance, context.run
    origin = run.remote_job_origin
    if origin is None or run.tags.get(LAUNCHED_BY_TAG) in COMMANDS:
        # executed in process: `lectio run` and `lectio migrate` build their own index (a re-execution of one of
        # their runs from the UI, relabelled as it starts, is the daemon's like any other)
        return None
    sensor = RemoteInstigatorOrigin(repository_origin=origin.repository_origin, instigator_name=INDEX_SENSOR)
    state = instance.get_instigator_state(sensor.get_id(), sensor.get_selector().get_id())
    if state is None or not state.is_running:
        return None
    cursor = state.instigator_data.cursor if state.instigator_data else None
    decision = batch_index(instance, cursor, lambda: writer_held(database), run)
    if isinstance(decision, str):
        return None
    request, _ = decision
    created = instance.create_run_for_job(
        job_def=context.repository_def.get_job(request.job_name), run_config=request.run_config,
        tags={**request.tags, "lectio/requested_by": run.run_id, REPOSITORY_LABEL_TAG: origin.repository_origin.get_label()},
        status=DagsterRunStatus.NOT_STARTED,
        remote_job_origin=RemoteJobOrigin(origin.repository_origin, request.job_name),
        job_code_origin=JobPythonOrigin(request.job_name, run.job_code_origin.repository_origin)
        if run.job_code_origin else None)
    try:
        instance.submit_run(created.run_id, workspace=None)
    except Exception:
        # Never left behind unqueued: the newest index run bounds what the sensor asks for.
        instance.delete_run(created.run_id)
        raise
    # Tagged once queued: a tag without a queued index would hide this run from the sensor.
    instance.add_run_tags(run.run_id, {INDEX_REQUESTED_TAG: created.run_id})
    return created.run_id


def writer_held(database) -> bool:
    """Whether the database's writer lock is held now (`database`: a DatabaseResource)."""
    with database.connect() as conn:
        return locks.writer_held(conn)


def _newest(records):
    return max(records, key=lambda r: r.create_timestamp.timestamp())


def _index_request(key: str, failed: list[str], tags: dict[str, str], model: str | None) -> RunRequest:
    """The index of a batch: built and switched in; or, where its runs embedded with a model a tag
    chose, built beside the live version with that model, scored and gated, as `lectio migrate
    --embedder` does, held to no drop beyond noise."""
    if model is None:
        return RunRequest(run_key=key, job_name=INDEX_JOB, tags=tags, run_config=RunConfig(
            ops={"search_index": IndexConfig(failed_sources=failed, switch_live=True)}))
    return RunRequest(run_key=key, job_name=MIGRATE_JOB, tags={**tags, MODEL_TAG: model}, run_config=RunConfig(
        ops={"search_index": IndexConfig(failed_sources=failed, switch_live=False),
             "live_index": {"config": {"tolerances": dict(MODEL_TOLERANCES)}}}))


def index_cursor(through: float) -> str:
    """index_after_batch's cursor: the last update time of the newest ingest run it indexed."""
    return json.dumps({"through": through})


def _cursor_time(cursor: str | None) -> float:
    state = json.loads(cursor) if cursor else None
    # An older cursor (a list of indexed batch ids) carries no time: the last index run bounds it.
    return float(state["through"]) if isinstance(state, dict) else 0.0


def _ingests(instance, run) -> bool:
    """A run of the ingest job, or one that materialises ingest assets (the UI's asset graph and
    asset backfills launch those as Dagster's implicit asset job); not one refused at its start
    (a partial ingest, assets.source_assets), which made nothing and failed no source. Refused as
    its events prove (assets.refusals): a launch may carry the refused tag, and a run so tagged
    was still read and embedded, or failed, and its batch's index must take it."""
    if not (run.job_name == INGEST_JOB or set(run.asset_selection or ()) & INGEST_KEYS):
        return False
    return refusal(instance, run) is None


def _ingest_in_progress(instance, ending=None) -> str | None:
    """What ingest work is still queued or running, besides the run `ending`, in words, or None."""
    records = instance.get_run_records(filters=RunsFilter(statuses=NOT_FINISHED))
    runs = [r for r in records if _ingests(instance, r.dagster_run) and not _finished(r)
            and (ending is None or r.dagster_run.run_id != ending.run_id)]
    backfills = [b for b in instance.get_backfills(filters=BulkActionsFilter(statuses=OPEN_BACKFILLS))
                 if b.job_name == INGEST_JOB or set(b.asset_selection or ()) & INGEST_KEYS]
    parts = [f"{len(runs)} ingest run(s)" if runs else "", f"{len(backfills)} backfill(s)" if backfills else ""]
    return " and ".join(p for p in parts if p) or None


def _command_in_progress(instance, writer_held: Callable[[], bool]) -> str | None:
    """The `lectio run` or `lectio migrate` still at work, in words ("lectio run (process 812)"),
    or None. Such a command executes its runs in process one after another, holding the database's
    writer lock throughout, and builds the index after the last: between two of its runs nothing is
    in progress, yet an index asked for then failed on that lock (WriterBusy, a red run that paged
    the team). At work: the newest of its runs is an ingest run, or has not ended, and its process
    may still run (a killed one's runs are a batch like any other)."""
    records = instance.get_run_records(filters=RunsFilter(tags={LAUNCHED_BY_TAG: list(COMMANDS)}), limit=1)
    if not records or (records[0].dagster_run.job_name != INGEST_JOB and _finished(records[0])):
        return None
    run = records[0].dagster_run
    if not executed_by_live_process(run) or time.time() - records[0].update_timestamp.timestamp() > STALE_RUN_SECONDS:
        return None
    if not writer_held():
        return None
    return f"{run.tags[LAUNCHED_BY_TAG]} (process {run.tags[OWNER_PID_TAG]})"


def _last_index_start(instance) -> float:
    """When the newest index run (a build, or a migration's) was created: whatever finished before
    it (`lectio run`'s own ingest, say) it has read already."""
    starts = [records[0].create_timestamp.timestamp() for job in (INDEX_JOB, MIGRATE_JOB)
              if (records := instance.get_run_records(filters=RunsFilter(job_name=job), limit=1))]
    return max(starts, default=0.0)


def _ingest_runs_since(instance, since: float) -> list:
    """The ingest runs that ended after `since`, and those stuck since then (see _finished); not
    those that asked for their batch's index themselves (request_index_now)."""
    after = datetime.fromtimestamp(since, tz=timezone.utc)
    records = instance.get_run_records(filters=RunsFilter(updated_after=after))
    return [r for r in records if _ingests(instance, r.dagster_run) and _finished(r)
            and r.update_timestamp.timestamp() > since and not _index_asked(instance, r.dagster_run)]


def _index_asked(instance, run) -> bool:
    """Whether the run asked for its batch's index itself and that index run is still there: one
    deleted (the UI's run list offers it, queued or not) builds nothing, and the batch would
    otherwise never be indexed."""
    asked = run.tags.get(INDEX_REQUESTED_TAG)
    return asked is not None and instance.has_run(asked)


def _failed_unstarted(instance, run) -> bool:
    """Failed or canceled before any step started: it read and stored nothing, so no batch counts
    it. A tag lectio/embed_model naming no model of the home fails a run so, as its embedder is
    made, and the migrate_index its batch asked for, tagged alike, failed the same way again."""
    return (run.status in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)
            and not instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START))


def _failed_partitions(instance, records, ending=None) -> list[str]:
    """Sources whose latest run among these did not succeed (a stuck run counts as failed), or
    succeeded without reading anything because the source's entry failed its check; the source of
    the run `ending` (which succeeded) not among them."""
    latest: dict[str, tuple[float, object]] = {}
    for record in records:
        key, stamp = record.dagster_run.tags.get("dagster/partition"), record.create_timestamp.timestamp()
        if key and (key not in latest or latest[key][0] < stamp):
            latest[key] = (stamp, record.dagster_run)
    if ending is not None:
        latest.pop(ending.tags.get("dagster/partition"), None)
    return sorted(k for k, (_, run) in latest.items() if not _succeeded(instance, run))


def _succeeded(instance, run) -> bool:
    if run.status != DagsterRunStatus.SUCCESS:
        return False
    checks = instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
    return entry_failure(entry.dagster_event for entry in checks) is None


def _batch_label(run) -> str:
    """What requested a run, for the index run's tag: its batch, its backfill, or the run itself."""
    if batch := run.tags.get(BATCH_TAG):
        return batch
    if backfill := run.tags.get("dagster/backfill"):
        return f"backfill-{backfill}"
    return f"run-{run.run_id[:8]}"


def _finished(record) -> bool:
    """Ended, or stuck: a run whose worker died stays STARTED forever and would hold the index."""
    if record.dagster_run.status in FINISHED:
        return True
    return time.time() - record.update_timestamp.timestamp() > STALE_RUN_SECONDS


def source_partitions(context) -> list[str]:
    """The partitions of the loaded code location (the sources file as it was at load time): the
    sources a schedule's or sensor's batch may cover."""
    return list(context.repository_def.get_job(INGEST_JOB).partitions_def.get_partition_keys())


def batch_tags(batch: str, size: int) -> dict[str, str]:
    """The tags that make the ingest runs a schedule or sensor requests together one batch."""
    return {BATCH_TAG: batch, BATCH_SIZE_TAG: str(size)}
