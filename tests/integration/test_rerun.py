"""A quiet night costs seconds: `lectio run` with nothing changed reads, chunks and embeds
nothing, and a change to one source runs that source alone."""

from __future__ import annotations

from dagster import DagsterInstance, RunsFilter

from pipelines.jobs import INGEST_JOB
from test_trust import home, run  # noqa: F401  (the fixture: a small home of its own)


def ingest_runs() -> int:
    return len(DagsterInstance.get().get_run_records(filters=RunsFilter(job_name=INGEST_JOB)))


def test_nothing_changed_nothing_done_and_one_change_reruns_one_source(home):  # noqa: F811
    sources = home.sources("rerun")
    first = run(home, sources)
    assert first.index["ok"] and not first.failed
    before = ingest_runs()

    again = run(home, sources)
    assert ingest_runs() == before  # no source went through ingest
    assert not again.failed and again.index["version"] == first.index["version"] and again.index["live"]
    assert all(o.facts["embeddings"]["embedded"] == 0 for o in again.sources)
    assert first.model_seconds > 0 and again.model_seconds == 0  # the report's model/other split

    notes = home.folder / "alice.jsonl"
    notes.write_text(notes.read_text() + '{"id": "n-new", "ref": "Psalm 23:1", "text": "A new note."}\n')
    changed = run(home, sources)
    assert ingest_runs() == before + 1  # notes-alice only
    assert changed.index["version"] != first.index["version"] and changed.index["live"]
    by_id = {o.source_id: o for o in changed.sources}
    assert by_id["notes-alice"].facts["embeddings"]["embedded"] >= 1
