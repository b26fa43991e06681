"""`index_after_batch`: the index of every ingest run that finished since the last one, once none
is in progress; a version held back for the gate handed to `gate_candidate` (the rule: pipelines.batches)."""

from __future__ import annotations

from dagster import DefaultSensorStatus, SensorEvaluationContext, SensorResult, SkipReason, sensor

from assets.names import MODEL_TAG
from pipelines import batches
from resources import DatabaseResource

# Under the sensor daemon's loop, which comes round every 5 s, so each pass evaluates the sensor:
# at 5 s itself a pass that came a moment early found the last tick not yet 5 s old and skipped
# it, and ticks came 10 s apart as often as 5 s (ui_run_time.py's sensor_tick_gaps).
INDEX_SENSOR_INTERVAL = 1
# The sensor daemon's pass (Dagster's own loop time, not configurable): how often the sensor
# really ticks. Its page's Frequency shows the minimum interval above ("~1 sec"), so its
# description says this one.
DAEMON_PASS_SECONDS = 5


def index_after_batch_sensor(index_job, migrate_job, gate_job):
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
