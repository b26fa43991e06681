"""`alert_on_failed_runs`: an alert for every failed run, naming the source and the failing step;
not for a run lectio refused at its start, nor for one a blocking check failed (that check alerts)."""

from __future__ import annotations

from dagster import DagsterEventType, DefaultSensorStatus, RunFailureSensorContext, SkipReason, run_failure_sensor

from assets.names import REFUSED_TAG
from assets.outcomes import root_cause
from assets.refusals import refusal
from lectio.alerts import Alert, run_url
from lectio.settings import load_settings
from pipelines.sensors.delivery import HELD, SENT, UNSENT, deliver
from resources import DatabaseResource


def run_alert(context: RunFailureSensorContext, ui_url: str) -> Alert:
    run = context.dagster_run
    # The run's engine events last: the run queue's says why a run it could not start was failed.
    engine = [entry.dagster_event for entry in context.instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)]
    asset, message = root_cause([*context.get_step_failure_events(), context.failure_event, *engine]) or (None, None)
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


def alert_on_failed_runs_sensor(where: str):
    """The sensor, its description saying `where` the alerts go."""
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
        (outcome,) = deliver([alert], database, settings, context.log.info)
        said = {SENT: "alerted", HELD: "held back as already alerted", UNSENT: "not sent (no channel took it)"}[outcome]
        return SkipReason(f"{said}: {alert.subject}: {alert.message[:200]}")

    return alert_on_failed_runs
