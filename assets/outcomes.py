"""What a failed run says about itself, read one way by `lectio run` (pipelines.runners), by the
failed-run alert (pipelines.sensors.alert_on_failed_runs) and by the index run naming its failed sources;
and how a step refuses its run (refuse), which assets.refusals reads back."""

from __future__ import annotations

from typing import Iterable

from dagster import DagsterEvent, DagsterEventType, Failure

from assets.names import REFUSED_TAG
from lectio.alerts import one_line

# The module of the errors Dagster wraps a step's or a resource's own error in (DagsterExecutionStepExecutionError,
# DagsterResourceFunctionError, …): their words are Dagster's, never the problem.
DAGSTER_WRAPPERS = "dagster._core.errors."
# What a step that succeeded leaves in its run's events: such a run did not make nothing.
MADE = (DagsterEventType.STEP_SUCCESS, DagsterEventType.ASSET_MATERIALIZATION)


def refuse(context, line: str, tag: str) -> None:
    """Refuses the run of this step (context: its execution context) with `line`, one line saying
    what to run instead, and tags it (REFUSED_TAG: `tag`). At its start, before any of its steps
    succeeded, the run is canceled as the step fails: Dagster shows every check a failed run
    planned as failed ("Execution failed"), and a refused partial ingest painted its eight checks
    red though none ran; a run that ends Canceled shows them skipped, and each check page keeps its
    last real evaluation. Refused later, the run fails and alerts (assets.refusals)."""
    instance, run = context.instance, context.dagster_run
    instance.add_run_tags(run.run_id, {REFUSED_TAG: tag})
    if not made_something(instance, run.run_id):
        instance.report_run_canceling(run, message=line)
    raise Failure(line, allow_retries=False)


def made_something(instance, run_id: str) -> bool:
    """Whether a step of the run succeeded or an asset of it was materialized."""
    return any(instance.all_logs(run_id, of_type=kind) for kind in MADE)


def root_cause(events: Iterable[DagsterEvent]) -> tuple[str | None, str] | None:
    """The first failed step and its error's root cause (the SourceError naming the source, say)
    rather than Dagster's wrapper around it: (step key, message). Where no step failed, the run's
    own error, with no step: a run can fail before any step starts (a resource that cannot be made,
    such as the embedder a bad lectio/embed_model tag names), and its failure event then says only
    "An exception was thrown during execution". Where the run carries none either, the last error
    an engine event of it carries: a run the queue could not start (its code location not in the
    daemon's workspace) is failed from outside, "marked as failed from outside the execution
    context", and only the queue's engine event says why. None when none carries an error."""
    run_error = engine_error = None
    for event in events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            return event.step_key, root_message(event.step_failure_data.error)
        if event.event_type == DagsterEventType.RUN_FAILURE:
            run_error = getattr(event.event_specific_data, "error", None) or run_error
        if event.event_type == DagsterEventType.ENGINE_EVENT:
            engine_error = getattr(event.event_specific_data, "error", None) or engine_error
    error = run_error or engine_error
    return (None, root_message(error)) if error is not None else None


def root_message(error) -> str:
    """What went wrong, in the words of whoever raised it, as one plain line: the first error below
    Dagster's own wrappers ("Error occurred while executing op …"). Where lectio wrapped an error
    in its own words (the output it could not store, the runtime to set instead), those are the
    line: the innermost error, taken before, dropped them and led with a class name
    ("IsADirectoryError: [Errno 21] Is a directory: '…'"). Without the dotted class path
    Python's traceback puts before an error of a package ("lectio.sources.SourceError: ")."""
    while error.cause is not None and error.message.startswith(DAGSTER_WRAPPERS):
        error = error.cause
    return one_line(error.message)
