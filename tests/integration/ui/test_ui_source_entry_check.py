"""A bad source entry is one failed check naming the field: `source_entry`, evaluated in
raw_texts' step before anything is read, so no later stage or chunk check runs for that source,
and the UI shows those checks as skipped, not failed."""

from __future__ import annotations

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterEventType, DagsterInstance

from assets.source_assets import entry_failure
from tests.dagster_internals import check_status
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from assets.names import FAILED_TAG, INGEST_JOB

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


def _ingest(sources, instance, key):
    """The ingest job, as the UI launches it: the assets with every check on them (materialize()
    would take only the checks defined inside the assets)."""
    job = build_definitions(sources).resolve_job_def(INGEST_JOB)
    return job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False, run_config=QUIET)


def _evaluations(result):
    return {e.event_specific_data.check_name: e.event_specific_data for e in result.all_events
            if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION}


@pytest.mark.parametrize("entry, field", [
    ("{id: entry-noacl, kind: document, format: text, path: rota.txt}", "acl"),
    ("{id: entry-badacl, kind: document, format: text, path: rota.txt, acl: []}", "acl"),
    ("{id: entry-gone, kind: document, format: text, path: gone.txt, acl: [public]}", "path"),
    ("{id: entry-kind, kind: novel, format: text, path: rota.txt, acl: [public]}", "kind"),
    # Which formats exist and which take rules, the formats say: the same check, the same field.
    ("{id: entry-format, kind: document, format: docx, path: rota.txt, acl: [public]}", "format"),
    ("{id: entry-rules, kind: document, format: text, path: rota.txt, acl: [public], rules: {x: 1}}", "rules"),
    ("{id: entry-title, kind: document, format: text, path: rota.txt, acl: [public], title: [a, b]}", "title"),
])
def test_a_bad_entry_is_one_failed_check_naming_its_field(instance, tmp_path, caplog, entry, field):
    (tmp_path / "rota.txt").write_text("Rota\n\nSunday: tea after the service.\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"sources:\n  - {entry}\n")
    key = entry.split(",")[0].removeprefix("{id: ")
    import pipelines.runners  # noqa: F401  (lectio run's process: its log filter is installed)

    result = _ingest(sources, instance, key)
    (evaluation,) = _evaluations(result).values()  # no chunk or embedding check ran
    # Dagster's warnings that the skipped chunk checks "emitted no result" and that embeddings
    # "will proceed" (it was skipped) do not reach lectio run's console.
    assert "emitted no result" not in caplog.text
    assert evaluation.check_name == "source_entry" and not evaluation.passed
    assert evaluation.metadata["field"].value == field and key in evaluation.description
    # The run ends successfully (the checks it never reached read as skipped), flagged where a
    # team looks first: the failed-sources tag in the Runs list, an error line in its log.
    assert result.success and instance.get_run_by_id(result.run_id).tags[FAILED_TAG] == key
    assert [e for e in instance.all_logs(result.run_id) if e.level >= 40 and key in e.message]
    # raw_texts read nothing and yielded nothing: every later step was skipped, none failed.
    assert not [e for e in result.all_events if e.is_step_failure]
    # (source_inputs, observed first in every ingest run, succeeds too: it reads no source.)
    assert {e.step_key for e in result.all_events if e.is_step_success} == {"source_inputs", "raw_texts"}
    assert {"parsed_structure", "chunks", "embeddings"} <= {e.step_key for e in result.all_events if e.is_step_skipped}
    assert key not in instance.get_materialized_partitions(AssetKey("raw_texts"))
    # What the UI shows for each check of this partition, as Dagster resolves it: the entry check
    # failed, the chunk checks skipped (in a failed run they would all read "Failed").
    assert _shown(instance, AssetCheckKey(AssetKey("raw_texts"), "source_entry"), key, result.run_id) == "FAILED"
    for name in ("permission_tags", "header_presence", "unique_chunk_ids", "chunk_sizes", "verse_coverage"):
        assert _shown(instance, AssetCheckKey(AssetKey("chunks"), name), key, result.run_id) == "SKIPPED", name
    # … and the source counts as failed wherever runs are read.
    assert entry_failure(result.all_events) == evaluation.description


def _shown(instance, check_key, partition, run_id) -> str:
    shown_run, status = check_status(instance, check_key, partition)
    assert shown_run == run_id
    return status


def test_a_good_entry_passes_and_the_chunk_checks_run(instance, tmp_path):
    (tmp_path / "rota.txt").write_text("Rota\n\nMonday: the chairs are stacked.\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - {id: entry-good, kind: document, format: text, path: rota.txt, acl: [public]}\n")
    result = _ingest(sources, instance, "entry-good")
    assert result.success
    evaluations = _evaluations(result)
    assert evaluations["source_entry"].passed
    assert {"permission_tags", "header_presence", "unique_chunk_ids", "embedding_vectors"} <= set(evaluations)
    assert instance.get_latest_materialization_event(AssetKey("raw_texts")) is not None
    assert AssetCheckKey(AssetKey("raw_texts"), "source_entry") in build_definitions(sources).resolve_asset_graph().asset_check_keys
