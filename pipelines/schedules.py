"""The code location's schedule: `nightly_reembed` (02:00 UTC) requests one `ingest_source` run per
source, all tagged with one batch id. Re-embedding only what is missing or stale is not this
schedule's doing: the embeddings asset goes through the cache keyed by (content hash, model id),
so an unchanged source embeds nothing and a changed text or model re-embeds just those chunks;
index_after_batch (pipelines/sensors/) then builds the index. It starts STOPPED."""

from __future__ import annotations

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, schedule

from assets.names import INGEST_JOB
from pipelines.batches import batch_tags, source_partitions

NIGHTLY_CRON = "0 2 * * *"


def build_schedules(jobs: dict, sources: list[str]) -> list:
    """The schedule of the ingest job, its description naming the sources file's `sources`."""
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
        keys = source_partitions(context)
        batch = f"nightly-{context.scheduled_execution_time:%Y-%m-%d}"
        return [
            RunRequest(run_key=f"{batch}:{key}", partition_key=key, tags=batch_tags(batch, len(keys)))
            for key in keys
        ]

    return [nightly_reembed]
