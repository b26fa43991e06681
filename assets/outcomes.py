"""What a failed run says about itself, read one way by `lectio run` (pipelines.runners), by the
failed-run alert (pipelines.automation) and by the index run naming its failed sources."""

from __future__ import annotations

import re
from typing import Iterable

from dagster import DagsterEvent, DagsterEventType


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
    """The innermost cause of a serialized error, in its own words: without the dotted class path
    Python's traceback puts before an error of a package ("lectio.sources.SourceError: ",
    "dagster._core.definitions.events.Failure: "), whose message is written for the reader; a
    builtin's name stays ("KeyError: 'x'" says little without it)."""
    while error.cause is not None:
        error = error.cause
    return re.sub(r"^\w+(\.\w+)+: ", "", error.message.strip())
