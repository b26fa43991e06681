"""Whether lectio itself refused a run at its start: a partial ingest (assets.source_assets) or
incidental training (assets.training). Such a run made nothing, so no batch counts it and no
alert pages for it.

Refused at its start, before any step of it succeeded, a run ends Canceled, so the checks it
planned read skipped, not failed (assets.outcomes.refuse). Refused later (Materialize all's run
that built the index and then came to training), the run fails as any run would, and alerts: it
built something, and did not finish.

Its tag (REFUSED_TAG) says so on the run's page, but it cannot prove it: a launch may carry any
tag, and Dagster copies a launch's tags onto its run, so a UI user could tag any run refused and
its real failure would page nobody, or leave a real ingest out of its batch's index. What proves
a refusal is the run's own events: every step that failed, failed with the very line the refusal
gives for that step of this run's selection, raised as lectio's Failure. No launch writes those."""

from __future__ import annotations

from dagster import DagsterEventType, DagsterRunStatus

from assets.names import INGEST_ASSETS, REFUSED_TAG
from assets.outcomes import made_something
from assets.source_assets import partial_ingest
from assets.training import TRAINING_ASSETS, incidental_training


def refusal(instance, run) -> str | None:
    """The line lectio refused `run` (a DagsterRun) at its start with, as its events prove it, or
    None: the run was not refused, or its tag says so and its events do not, or it was refused
    after a step of it succeeded (it built something, then failed: not a run that did nothing)."""
    if REFUSED_TAG not in run.tags or run.status not in (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED):
        return None  # lectio tags every run it refuses: without the tag, no events are read
    failures = [entry.dagster_event for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_FAILURE)]
    lines = [_refused_step(instance, run, event) for event in failures]
    if not lines or not all(lines) or made_something(instance, run.run_id):
        return None
    return lines[0]


def _refused_step(instance, run, event) -> str | None:
    """The refusal this step failure is, or None: its Failure's line must be the one the refusal
    gives for this step of this run (a UI launch cannot make a step fail with a chosen line)."""
    given = event.step_failure_data.user_failure_data if event.step_failure_data else None
    expected = _expected_refusal(instance, run, event.step_key)
    return expected if given is not None and expected is not None and given.description == expected else None


def _expected_refusal(instance, run, step: str) -> str | None:
    """What the refusal at the start of `step` says for this run's selection, or None where that
    step refuses nothing here."""
    selected = {key.to_user_string() for key in run.asset_selection or ()}
    if step in INGEST_ASSETS:
        return partial_ingest(selected, step, run.tags.get("dagster/partition"))
    if step in TRAINING_ASSETS:
        # As the step judged it: with the assets of the backfill that launched the run.
        backfill = instance.get_backfill(run.tags["dagster/backfill"]) if "dagster/backfill" in run.tags else None
        keys = (backfill.asset_selection or ()) if backfill is not None else ()
        return incidental_training(selected | {key.to_user_string() for key in keys}, step)
    return None
