"""`alert_on_failed_checks`: an alert for every failed asset check evaluation, each sent once; for
every_source_indexed, once per set of failed sources until it passes again."""

from __future__ import annotations

import psycopg
from dagster import DagsterEventType, DefaultSensorStatus, EventRecordsFilter, SensorEvaluationContext, SkipReason, sensor

from assets.entry_check import RESTATED_KEY
from assets.index import SOURCES_CHECK
from lectio.alerts import Alert, cleared, run_url
from lectio.settings import Settings, load_settings
from pipelines.sensors.delivery import HELD, SENT, UNSENT, deliver
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


def _alerts_in_order(records, instance, database: DatabaseResource, settings: Settings,
                     log_fn) -> list[tuple[Alert, str]]:
    """Each failed evaluation's alert, sent in the order the evaluations came, with what became of
    it (pipelines.sensors.delivery: sent, held back as sent already, or not sent); a passing
    evaluation of a standing condition (SOURCES_CHECK) clears it first, so a failure after it is
    news again."""
    done, pending = [], []
    for record in records:
        evaluation = record.event_log_entry.dagster_event.event_specific_data
        if evaluation.passed and evaluation.check_name == SOURCES_CHECK:
            done += zip(pending, deliver(pending, database, settings, log_fn))
            pending = []
            with database.connect() as conn:
                cleared(conn, SOURCES_CHECK)
        elif (alert := check_alert(record, settings.ui_url, instance)) is not None:
            pending.append(alert)
    return done + list(zip(pending, deliver(pending, database, settings, log_fn)))


def _named(alerts: list[Alert]) -> str:
    named = "; ".join(a.subject for a in alerts[:5])
    return named + (f" and {len(alerts) - 5} more" if len(alerts) > 5 else "")


def alert_summary(alerts: list[Alert], held: list[Alert] = (), unsent: list[Alert] = ()) -> str:
    """What a tick alerted on, in its own words ("1 alert: chunk_count on notes-alice, run 3f2a9c1d"):
    a sensor that sends alerts requests no runs, so Dagster's "0 runs requested" would say nothing.
    `alerts` were sent; those `held` back (every channel had them already: sent before, or the
    same set of failed sources) and those `unsent` (every channel failed, or none is set) are
    named apart, never counted as sent."""
    parts = [f"{len(alerts)} alert{'s' if len(alerts) > 1 else ''}: {_named(alerts)}" if alerts else "no alert"]
    if held:
        parts.append(f"held back as already alerted: {_named(held)}")
    if unsent:
        parts.append(f"not sent (no channel took it): {_named(unsent)}")
    return "; ".join(parts)


def tick_summary(outcomes: list[tuple[Alert, str]]) -> str:
    """alert_summary of one tick's alerts and what became of each."""
    return alert_summary(*([a for a, got in outcomes if got == wanted] for wanted in (SENT, HELD, UNSENT)))


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
            outcomes = _alerts_in_order(records, context.instance, database, load_settings(), context.log.info)
        except (OSError, psycopg.OperationalError) as exc:
            # The database cannot be reached this tick: one line with its reason, and the cursor
            # stays, so the next tick sends these (what was sent already is not sent twice).
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return SkipReason(f"alerts not sent this tick, tried again on the next: {reason}")
        context.update_cursor(str(records[-1].storage_id))
        return SkipReason(f"{len(records)} check evaluations read; {tick_summary(outcomes)}")

    return alert_on_failed_checks
