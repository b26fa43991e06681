"""Schedules and sensors: the nightly re-embed, source changes, the index after a batch, alerts.

How they fit together (docs/operations.md tells the operator's side):

- `nightly_reembed` (02:00 UTC) requests one `ingest_source` run per source, all tagged with one
  batch id. Re-embedding only what is missing or stale is not this schedule's doing: the
  embeddings asset goes through the cache keyed by (content hash, model id), so an unchanged
  source embeds nothing and a changed text or model re-embeds just those chunks.
- `source_changes` fingerprints every source's inputs (entry, files, the version of its ruleset,
  the embedding model), records them as `source_inputs` observations (so the UI's staleness
  follows them) and requests `ingest_source` runs for exactly the sources whose fingerprint
  moved, again tagged as one batch.
- `index_after_batch` treats every ingest run that finished since the last index as one batch,
  however it was started (the UI, a backfill, this schedule, `source_changes`): once no ingest
  run is queued or running and no backfill of ingest assets is open, it requests one
  `build_index` run, told which of those sources failed (each keeps its last good chunks, the
  rest goes live, and the build's `every_source_indexed` check fails naming them). It ticks
  on every pass of the daemon's sensor loop (5 s); with it on, an ingest run that ends its batch
  asks for the same index itself as its last step ends, so the sensor's pass is not waited for
  (pipelines.batches, where the rule lives). A version `build_index` held back because the
  chunking rules changed (lectio.index.build) it hands to `gate_candidate` at its next tick: a
  rule change goes live through the migration gate alone. While a `lectio run` or `lectio migrate`
  is at work it skips, saying so: that command builds the index of its own runs. A sensor rather than a second schedule at,
  say, 04:00: the index follows the partitions however long they take. Waiting for "nothing in
  progress" rather than for a batch's size makes it follow runs nobody tagged.
- `alert_on_failed_checks` and `alert_on_failed_runs` turn failed asset checks and failed runs
  into alerts (lectio.alerts), each sent once.
- `fail_orphaned_runs` fails the runs a `lectio run` or `lectio migrate` executed in process and
  that stayed STARTED when it was killed (pipelines.run_owners).

All but `fail_orphaned_runs` start STOPPED: turning them on is the operator's decision (UI →
Automation, or `dagster schedule start` / `dagster sensor start`). That one runs from the start: it
requests nothing, and without it a killed `lectio run` stops the run queue for hours.
"""

from __future__ import annotations

import hashlib
import json
import logging

import psycopg
from dagster import (
    DagsterEventType,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    EventRecordsFilter,
    RunFailureSensorContext,
    RunRequest,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    run_failure_sensor,
    schedule,
    sensor,
)

from pipelines import batches
from assets.entry_check import RESTATED_KEY
from assets.index import SOURCES_CHECK
from pipelines.observations import source_observations
from lectio.alerts import Alert, channels_from_settings, cleared, destinations, run_url, send_alerts
from lectio.rulesets.registry import input_fingerprints
from lectio.settings import Settings, load_settings
from assets.names import BATCH_SIZE_TAG, BATCH_TAG, GATE_JOB, INDEX_JOB, INGEST_JOB, MIGRATE_JOB, MODEL_TAG, REFUSED_TAG
from assets.outcomes import root_cause
from assets.refusals import refusal
from pipelines.run_owners import fail_orphaned_runs
from resources import CorpusResource, DatabaseResource, EmbedderResource

NIGHTLY_CRON = "0 2 * * *"
# Under the sensor daemon's loop, which comes round every 5 s, so each pass evaluates the sensor:
# at 5 s itself a pass that came a moment early found the last tick not yet 5 s old and skipped
# it, and ticks came 10 s apart as often as 5 s (ui_run_time.py's sensor_tick_gaps).
INDEX_SENSOR_INTERVAL = 1
# The sensor daemon's pass (Dagster's own loop time, not configurable): how often the sensor
# really ticks. Its page's Frequency shows the minimum interval above ("~1 sec"), so its
# description says this one.
DAEMON_PASS_SECONDS = 5
# Check evaluations read per tick; the cursor moves on, so a burst is worked off over ticks.
CHECK_EVENTS_PER_TICK = 500

log = logging.getLogger(__name__)


def _source_partitions(context) -> list[str]:
    """The partitions of the loaded code location (the sources file as it was at load time)."""
    return list(context.repository_def.get_job(INGEST_JOB).partitions_def.get_partition_keys())


def _batch_tags(batch: str, size: int) -> dict[str, str]:
    return {BATCH_TAG: batch, BATCH_SIZE_TAG: str(size)}


# ---------------------------------------------------------------- schedules


def build_schedules(jobs: dict, sources: list[str]) -> list:
    # The schedule's preview lists each request by its job alone ("ingest_source", once per
    # source); the partition is only in each request's tags. The description names them.

    @schedule(
        name="nightly_reembed",
        cron_schedule=NIGHTLY_CRON,
        execution_timezone="UTC",
        job=jobs[INGEST_JOB],
        default_status=DefaultScheduleStatus.STOPPED,
        description=f"One ingest_source run per source, each its partition ({', '.join(sources)}); only "
        "missing or stale embeddings are computed, and index_after_batch then builds the index.",
    )
    def nightly_reembed(context: ScheduleEvaluationContext):
        keys = _source_partitions(context)
        batch = f"nightly-{context.scheduled_execution_time:%Y-%m-%d}"
        return [
            RunRequest(run_key=f"{batch}:{key}", partition_key=key, tags=_batch_tags(batch, len(keys)))
            for key in keys
        ]

    return [nightly_reembed]


# ---------------------------------------------------------------- sensors


def build_sensors(jobs: dict) -> list:
    return [
        _source_change_sensor(jobs[INGEST_JOB]),
        _index_after_batch_sensor(jobs[INDEX_JOB], jobs[MIGRATE_JOB], jobs[GATE_JOB]),
        _failed_checks_sensor(_alerts_go_to()),
        _failed_runs_sensor(_alerts_go_to()),
        _orphaned_runs_sensor(),
    ]


def _source_change_sensor(ingest_job):
    @sensor(
        name="source_changes",
        job=ingest_job,
        minimum_interval_seconds=300,
        default_status=DefaultSensorStatus.STOPPED,
        description="Requests ingest runs for exactly the sources whose content or entry changed.",
    )
    def source_changes(context: SensorEvaluationContext, corpus: CorpusResource, embedder: EmbedderResource):
        # Cursor: {"generation": n, "fingerprints": {source: hash}}. The first sight of a source
        # is its baseline (a never-ingested source is the nightly run's business, not a change).
        state = json.loads(context.cursor) if context.cursor else {"generation": 0, "fingerprints": {}}
        seen: dict[str, str] = state["fingerprints"]
        keys = _source_partitions(context)
        prints = input_fingerprints(corpus.sources_path, corpus.corpus_path, embedder.model_id)
        now = {k: prints.get(k, "removed") for k in keys}
        changed = [k for k in keys if now[k] is not None and k in seen and seen[k] != now[k]]
        fingerprints = {**seen, **{k: v for k, v in now.items() if v is not None}}
        fingerprints = {k: v for k, v in fingerprints.items() if k in keys}
        # Observed before any run it requests, so that run's materializations record these.
        observed = source_observations({k: v for k, v in now.items() if v is not None and seen.get(k) != v})
        if not changed:
            return SensorResult(
                skip_reason=f"no source changed ({len(keys)} watched)",
                cursor=json.dumps({**state, "fingerprints": fingerprints}, sort_keys=True),
                asset_events=observed,
            )
        # The run key holds the generation and the new hash: a tick evaluated twice from the same
        # cursor asks for the same keys (Dagster drops the repeats), while a source that changes
        # back to an earlier content is still re-ingested (a later generation).
        generation = state["generation"] + 1
        batch = "changed-" + hashlib.sha256(
            json.dumps([generation, [(k, now[k]) for k in changed]]).encode()
        ).hexdigest()[:12]
        requests = [
            RunRequest(
                run_key=f"{k}:{generation}:{now[k][:16]}",
                partition_key=k,
                tags={**_batch_tags(batch, len(changed)), "lectio/source_fingerprint": now[k][:16]},
            )
            for k in changed
        ]
        context.log.info(f"sources changed: {', '.join(changed)}")
        return SensorResult(
            run_requests=requests,
            cursor=json.dumps({"generation": generation, "fingerprints": fingerprints}, sort_keys=True),
            asset_events=observed,
        )

    return source_changes


def _index_after_batch_sensor(index_job, migrate_job, gate_job):
    # Every pass of the daemon's 5 s loop: the index follows a UI ingest within seconds, not up
    # to a minute later (source to searchable was 4x `lectio run`). A tick is a few queries.
    @sensor(
        name=batches.INDEX_SENSOR,
        jobs=[index_job, migrate_job, gate_job],
        minimum_interval_seconds=INDEX_SENSOR_INTERVAL,
        default_status=DefaultSensorStatus.STOPPED,
        description="Builds the index once the ingest runs since the last index (from the UI, a backfill, "
        f"the schedule or a sensor) have all finished; where they carry {MODEL_TAG} (a backfill launched as a "
        "migration to that model), builds it as a candidate and gates it (migrate_index); a version build_index "
        f"held back because the chunking rules changed, it hands to gate_candidate. Ticks every {DAEMON_PASS_SECONDS} "
        f"s, on every pass of the sensor daemon (the Frequency shown, ~{INDEX_SENSOR_INTERVAL} sec, is the least "
        "time between two ticks, set under the daemon's pass so that no pass is skipped).",
    )
    def index_after_batch(context: SensorEvaluationContext, database: DatabaseResource):
        # A rule change is switched in by the gate alone (lectio.index.build): its version first.
        if gate := batches.gate_request(context.instance):
            return SensorResult(run_requests=[gate])
        decision = batches.batch_index(context.instance, context.cursor, lambda: batches.writer_held(database))
        if isinstance(decision, str):
            return SkipReason(decision)
        request, cursor = decision
        return SensorResult(run_requests=[request], cursor=cursor)

    return index_after_batch


def _deliver(alerts: list[Alert], database: DatabaseResource, settings: Settings, log_fn) -> None:
    if not alerts:
        return
    with database.connect() as conn:
        deliveries = send_alerts(conn, alerts, channels_from_settings(settings))
    # The tick's log names what each alert is about; its fingerprint means nothing to a reader.
    subjects = {a.fingerprint: a.subject for a in alerts}
    for d in deliveries:
        if d.status == "failed":
            log_fn(f"alert ({subjects[d.fingerprint]}) not sent on {d.channel}: {d.error}")
        elif d.status == "sent":
            log_fn(f"alert ({subjects[d.fingerprint]}) sent on {d.channel}")


def check_alert(record, ui_url: str, instance) -> Alert | None:
    """The alert for one ASSET_CHECK_EVALUATION event record, or None when the check passed."""
    evaluation = record.event_log_entry.dagster_event.event_specific_data
    if evaluation.passed or RESTATED_KEY in (evaluation.metadata or {}):
        return None  # a restated failure was alerted when it was first evaluated (assets.entry_check)
    run_id = record.event_log_entry.run_id
    # A check emitted by a partitioned asset carries no partition of its own (only partitioned
    # check specs do); the source is then the partition of the run that evaluated it.
    partition = evaluation.partition
    if partition is None:
        run = instance.get_run_by_id(run_id)
        partition = run.tags.get("dagster/partition") if run else None
    details = {"severity": evaluation.severity.value}
    for name, value in (evaluation.metadata or {}).items():
        if isinstance(value.value, (int, float, str, bool)):
            details[name] = value.value
    return Alert(
        kind="check_failed",
        message=evaluation.description or f"{evaluation.check_name} did not pass ({evaluation.severity.value})",
        run_id=run_id,
        run_url=run_url(ui_url, run_id),
        asset=evaluation.asset_key.to_user_string(),
        check=evaluation.check_name,
        partition=partition,
        details=details,
        # Every index build judges every source again: one alert per set of failed sources.
        state=str(details.get("failed_sources", "")) if evaluation.check_name == SOURCES_CHECK else None,
    )


def _alerts_in_order(records, instance, database: DatabaseResource, settings: Settings, log_fn) -> list[Alert]:
    """Each failed evaluation's alert, sent in the order the evaluations came; a passing
    evaluation of a standing condition (SOURCES_CHECK) clears it first, so a failure after it is
    news again."""
    sent, pending = [], []
    for record in records:
        evaluation = record.event_log_entry.dagster_event.event_specific_data
        if evaluation.passed and evaluation.check_name == SOURCES_CHECK:
            _deliver(pending, database, settings, log_fn)
            sent, pending = sent + pending, []
            with database.connect() as conn:
                cleared(conn, SOURCES_CHECK)
        elif (alert := check_alert(record, settings.ui_url, instance)) is not None:
            pending.append(alert)
    _deliver(pending, database, settings, log_fn)
    return sent + pending


def _alerts_go_to() -> str:
    """Where this code location's alerts go, as its environment sets the channels (read as the
    definitions load, as the sensors read it as they send)."""
    return destinations(channels_from_settings(load_settings()))


def _failed_checks_sensor(where: str):
    @sensor(
        name="alert_on_failed_checks",
        minimum_interval_seconds=60,
        default_status=DefaultSensorStatus.STOPPED,
        description="Sends an alert for every failed asset check evaluation (once per check, source and run; "
        f"for every_source_indexed, once per set of failed sources until it passes again). {where}",
    )
    def alert_on_failed_checks(context: SensorEvaluationContext, database: DatabaseResource):
        storage = context.instance.event_log_storage
        event_filter = EventRecordsFilter(event_type=DagsterEventType.ASSET_CHECK_EVALUATION)
        if context.cursor is None:
            # First tick: start from now, rather than alert on every failure in history.
            latest = storage.get_event_records(event_filter, limit=1, ascending=False)
            context.update_cursor(str(latest[0].storage_id if latest else 0))
            return SkipReason("watching asset check evaluations from now on")
        records = storage.get_event_records(
            EventRecordsFilter(event_type=DagsterEventType.ASSET_CHECK_EVALUATION, after_cursor=int(context.cursor)),
            limit=CHECK_EVENTS_PER_TICK,
            ascending=True,
        )
        if not records:
            return SkipReason("no new asset check evaluations")
        try:
            alerts = _alerts_in_order(records, context.instance, database, load_settings(), context.log.info)
        except (OSError, psycopg.OperationalError) as exc:
            # The database cannot be reached this tick: one line with its reason, and the cursor
            # stays, so the next tick sends these (what was sent already is not sent twice).
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return SkipReason(f"alerts not sent this tick, tried again on the next: {reason}")
        context.update_cursor(str(records[-1].storage_id))
        return SkipReason(f"{len(records)} check evaluations read; {_alert_summary(alerts)}")

    return alert_on_failed_checks


def _alert_summary(alerts: list[Alert]) -> str:
    """What a tick alerted on, in its own words ("1 alert: chunk_count on notes-alice, run 3f2a9c1d"):
    a sensor that sends alerts requests no runs, so Dagster's "0 runs requested" would say nothing."""
    if not alerts:
        return "no alert"
    named = "; ".join(a.subject for a in alerts[:5])
    more = f" and {len(alerts) - 5} more" if len(alerts) > 5 else ""
    return f"{len(alerts)} alert{'s' if len(alerts) > 1 else ''}: {named}{more}"


def run_alert(context: RunFailureSensorContext, ui_url: str) -> Alert:
    run = context.dagster_run
    asset, message = root_cause([*context.get_step_failure_events(), context.failure_event]) or (None, None)
    return Alert(
        kind="run_failed",
        message=message or context.failure_event.message or "the run failed",
        run_id=run.run_id,
        run_url=run_url(ui_url, run.run_id),
        asset=asset,
        partition=run.tags.get("dagster/partition"),
        job=run.job_name,
        details={k: v for k, v in run.tags.items() if k.startswith(("lectio/", "dagster/partition", "dagster/schedule", "dagster/sensor"))},
    )


def failed_by_blocking_checks(context: RunFailureSensorContext) -> bool:
    """A blocking check that fails also fails its run: one problem, which should alert once."""
    errors = [e.step_failure_data.error if e.step_failure_data else None for e in context.get_step_failure_events()]
    return bool(errors) and all(error is not None and error.cls_name == "DagsterAssetCheckFailedError" for error in errors)


def _failed_runs_sensor(where: str):
    # Every code location: `lectio run` executes its runs in process, and a run gets its
    # code-location origin only once it has ended (pipelines.runners._execute), after its failure.
    @run_failure_sensor(
        name="alert_on_failed_runs",
        monitor_all_code_locations=True,
        minimum_interval_seconds=60,
        default_status=DefaultSensorStatus.STOPPED,
        description=f"Sends an alert for every failed run, naming the source and the failing step. {where}",
    )
    def alert_on_failed_runs(context: RunFailureSensorContext, database: DatabaseResource):
        # The tick says which run it handled (a run-failure sensor requests no runs, so Dagster's
        # own line would read "0 runs requested"); Dagster then handles one failed run per tick.
        run = context.dagster_run
        if refusal(context.instance, run):
            # Refused at its first step, having done nothing: the one who launched it reads why on
            # its page; the team is not paged for a selection made in the UI. Proven by the run's
            # events, not its tag, which any launch may carry (assets.refusals).
            return SkipReason(f"run {run.run_id[:8]} was refused at its start ({run.tags[REFUSED_TAG]}): nothing ran")
        if failed_by_blocking_checks(context):
            # alert_on_failed_checks reports it, with the check's own details.
            return SkipReason(f"run {run.run_id[:8]} failed by a blocking check: alert_on_failed_checks sends it")
        settings = load_settings()
        alert = run_alert(context, settings.ui_url)
        _deliver([alert], database, settings, context.log.info)
        return SkipReason(f"alerted: {alert.subject}: {alert.message[:200]}")

    return alert_on_failed_runs


def _orphaned_runs_sensor():
    @sensor(
        name="fail_orphaned_runs",
        minimum_interval_seconds=60,
        default_status=DefaultSensorStatus.RUNNING,
        description="Fails the runs a `lectio run` or `lectio migrate` executed in process and left STARTED "
        "when it was killed: they would hold the run queue's slots, and every queued run would wait.",
    )
    def fail_orphaned_runs_sensor(context: SensorEvaluationContext):
        repository = context.repository_def.name if context.repository_def else context.repository_name
        failed = fail_orphaned_runs(context.instance, repository)
        for message in failed:
            context.log.warning(message)
        return SkipReason(f"{len(failed)} run(s) marked failed: {'; '.join(failed)}" if failed
                          else "no STARTED run whose process is gone")

    return fail_orphaned_runs_sensor
