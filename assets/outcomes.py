"""What a failed run says about itself, read one way by `lectio run` (pipelines.runners), by the
failed-run alert (pipelines.sensors.alert_on_failed_runs) and by the index run naming its failed sources."""

from __future__ import annotations

from typing import Iterable

from dagster import DagsterEvent, DagsterEventType

from lectio.alerts import one_line

# The module of the errors Dagster wraps a step's or a resource's own error in (DagsterExecutionStepExecutionError,
# DagsterResourceFunctionError, …): their words are Dagster's, never the problem.
DAGSTER_WRAPPERS = "dagster._core.errors."


def root_cause(events: Iterable[DagsterEvent]) -> tuple[str | None, str] | None:
    """The first failed step and its error's root cause (the SourceError naming the source, say)
    rather than Dagster's wrapper around it: (step key, message). Where no step failed, the run's
    own error, with no step: a run can fail before any step starts (a resource that cannot be made,
    such as the embedder a bad lectio/embed_model tag names), and its failure event then says only
    "An exception was thrown during execution". None when neither carries an error."""
    run_error = None
    for event in events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            return event.step_key, root_message(event.step_failure_data.error)
        if event.event_type == DagsterEventType.RUN_FAILURE:
            run_error = getattr(event.event_specific_data, "error", None) or run_error
    return (None, root_message(run_error)) if run_error is not None else None


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
