"""`alert_on_failed_checks`: an alert for every failed asset check evaluation, each sent once; for
every_source_indexed, once per set of failed sources until it passes again."""

from __future__ import annotations

import psycopg
from dagster import DagsterEventType, DefaultSensorStatus, EventRecordsFilter, SensorEvaluationContext, SkipReason, sensor

from assets.entry_check import RESTATED_KEY
from assets.index import SOURCES_CHECK
from lectio.alerts import Alert, cleared, run_url
from lectio.settings import Settings, load_settings
from pipelines.sensors.delivery import deliver
from resources import DatabaseResource

# Check evaluations read per tick; the cursor moves on, so a burst is worked off over ticks.
CHECK_EVENTS_PER_TICK = 500


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
            deliver(pending, database, settings, log_fn)
            sent, pending = sent + pending, []
            with database.connect() as conn:
                cleared(conn, SOURCES_CHECK)
        elif (alert := check_alert(record, settings.ui_url, instance)) is not None:
            pending.append(alert)
    deliver(pending, database, settings, log_fn)
    return sent + pending


def alert_summary(alerts: list[Alert]) -> str:
    """What a tick alerted on, in its own words ("1 alert: chunk_count on notes-alice, run 3f2a9c1d"):
    a sensor that sends alerts requests no runs, so Dagster's "0 runs requested" would say nothing."""
    if not alerts:
        return "no alert"
    named = "; ".join(a.subject for a in alerts[:5])
    more = f" and {len(alerts) - 5} more" if len(alerts) > 5 else ""
    return f"{len(alerts)} alert{'s' if len(alerts) > 1 else ''}: {named}{more}"


def alert_on_failed_checks_sensor(where: str):
    """The sensor, its description saying `where` the alerts go."""
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
        return SkipReason(f"{len(records)} check evaluations read; {alert_summary(alerts)}")

    return alert_on_failed_checks
