"""What a failed run says about itself, read one way by `lectio run` (pipelines.runners), by the
failed-run alert (pipelines.automation) and by the index run naming its failed sources."""

from __future__ import annotations

from typing import Iterable

from dagster import DagsterEvent


def root_cause(events: Iterable[DagsterEvent]) -> tuple[str, str] | None:
    """The first failed step and its error's root cause (the SourceError naming the source, say)
    rather than Dagster's wrapper around it: (step key, message), or None when no step failed."""
    for event in events:
        error = event.step_failure_data.error if event.is_step_failure and event.step_failure_data else None
        if error is None:
            continue
        while error.cause is not None:
            error = error.cause
        return event.step_key, error.message.strip()
    return None
