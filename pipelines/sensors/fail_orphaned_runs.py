"""`fail_orphaned_runs`: the runs a killed `lectio run` or `lectio migrate` left STARTED, failed
(pipelines.run_owners), so they do not hold the run queue's slots. Declared once, as it closes
over nothing of the code location."""

from __future__ import annotations

from dagster import DefaultSensorStatus, SensorEvaluationContext, SkipReason, sensor

from pipelines import run_owners


@sensor(
    name="fail_orphaned_runs",
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description="Fails the runs a `lectio run` or `lectio migrate` executed in process and left STARTED "
    "when it was killed: they would hold the run queue's slots, and every queued run would wait.",
)
def fail_orphaned_runs(context: SensorEvaluationContext):
    repository = context.repository_def.name if context.repository_def else context.repository_name
    failed = run_owners.fail_orphaned_runs(context.instance, repository)
    for message in failed:
        context.log.warning(message)
    return SkipReason(f"{len(failed)} run(s) marked failed: {'; '.join(failed)}" if failed
                      else "no STARTED run whose process is gone")
