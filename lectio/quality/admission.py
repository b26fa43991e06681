"""Admission to an index: the blocking checks run again over the chunks about to be indexed
(lectio.index.build), against the sources file as it stands, so no path into the index skips
them. Not the migration gate (lectio.evaluation.migration_gate), which judges a whole built version."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from lectio.quality.checks import blocking_checks
from lectio.quality.results import CheckResult
from lectio.sources import Source, SourceError


def admit(chunks: pd.DataFrame, sources: Mapping[str, Source | SourceError] | None = None) -> dict[str, list[CheckResult]]:
    """Failed blocking checks per source, over the chunks about to be indexed.

    With `sources` (the sources file as it stands when the index is built), each source's ACL
    is compared with its chunks', so an ACL narrowed since the chunks were cut keeps them out.
    Only what the chunks themselves show is checked here: a table's header row needs the parsed
    document, which the chunk check of the same ingest run had, so nothing is read from disk
    again. A source missing from `sources`, or no longer valid there, fails, so nothing
    unverified gets in."""
    rejected: dict[str, list[CheckResult]] = {}
    for source_id, frame in chunks.groupby("source_id", sort=True):
        source, problem = None, None
        if sources is not None:
            found = sources.get(str(source_id))
            if isinstance(found, Source):
                source = found
            else:
                problem = str(found) if found is not None else f"{source_id} is no longer in the sources file"
        results = blocking_checks(frame, source)
        if problem:
            results.append(CheckResult("source_readable", False, True, f"cannot verify against the source: {problem}"))
        failed = [r for r in results if not r.passed]
        if failed:
            rejected[str(source_id)] = failed
    return rejected


def describe(rejected: Mapping[str, list[CheckResult]]) -> str:
    """One line per rejected source: which checks failed and how."""
    return "; ".join(f"{sid}: " + ", ".join(f"{r.name} ({r.description})" for r in results)
                     for sid, results in sorted(rejected.items()))
