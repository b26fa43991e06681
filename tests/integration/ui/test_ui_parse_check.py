"""A malformed file is one failed check naming the file and line: `source_parses`, evaluated in
parsed_structure's step. No later stage or check runs, and Dagster shows the chunk checks and
`embedding_vectors` as skipped, not as seven red "Execution failed"."""

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
LATER_CHECKS = [("chunks", name) for name in ("permission_tags", "header_presence", "unique_chunk_ids", "chunk_sizes",
                                              "chunk_count", "verse_coverage")] + [("embeddings", "embedding_vectors")]
NOTE = '{"id": "n1", "ref": "Romans 3:25", "text": "Propitiation here."}\n'


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


def _ingest(sources, instance, key):
    """The ingest job, as the UI launches it: the assets with every check on them."""
    job = build_definitions(sources).resolve_job_def(INGEST_JOB)
    return job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False, run_config=QUIET)


def _shown(instance, check_key, partition, run_id) -> str:
    """What the UI shows for a check of this partition, as Dagster resolves it."""
    shown_run, status = check_status(instance, check_key, partition)
    assert shown_run == run_id
    return status


@pytest.mark.parametrize("key, text, line", [
    ("cut-notes", NOTE + '{"id": "n2", "text": "cut sho\n', 2),  # a JSON line cut short
    ("twice-notes", NOTE + NOTE.replace("Propitiation", "Again"), 2),  # a note id used again on line 2
])
def test_a_malformed_file_is_one_failed_check_naming_file_and_line(instance, tmp_path, caplog, key, text, line):
    path = tmp_path / "notes.jsonl"
    path.write_text(text)
    sources = tmp_path / "sources.yaml"
    sources.write_text(f'sources:\n  - {{id: {key}, kind: notes, format: notes-jsonl, path: notes.jsonl, '
                       'acl: ["user:alice"]}\n')
    import pipelines.runners  # noqa: F401  (lectio run's process: its log filter is installed)

    result = _ingest(sources, instance, key)
    evaluations = [e.event_specific_data for e in result.all_events
                   if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION]
    (failed,) = [e for e in evaluations if not e.passed]
    assert (failed.asset_key, failed.check_name) == (AssetKey("parsed_structure"), "source_parses")
    assert {e.check_name for e in evaluations} <= {"source_entry", "source_parses"}  # nothing later ran
    # One line naming the source, the file and the line; file and line also as metadata.
    assert "\n" not in failed.description and key in failed.description
    assert str(path) in failed.description and f"line {line}" in failed.description
    assert "at at" not in failed.description  # the JSON error ends in "at" already
    assert failed.metadata["file"].value == str(path) and failed.metadata["line"].value == line
    # The run did not fail: its later steps were skipped, and Dagster's notes on skipped checks
    # do not reach lectio run's console.
    assert result.success and not [e for e in result.all_events if e.is_step_failure]
    assert {"chunks", "chunk_quality", "embeddings"} <= {e.step_key for e in result.all_events if e.is_step_skipped}
    # Flagged where a team looks first: the failed-sources tag in the Runs list.
    assert instance.get_run_by_id(result.run_id).tags[FAILED_TAG] == key
    assert "emitted no result" not in caplog.text
    # What the UI shows for this partition: the one check failed, every later one skipped.
    parse_check = AssetCheckKey(AssetKey("parsed_structure"), "source_parses")
    assert _shown(instance, parse_check, key, result.run_id) == "FAILED"
    for asset, name in LATER_CHECKS:
        assert _shown(instance, AssetCheckKey(AssetKey(asset), name), key, result.run_id) == "SKIPPED", name
    # `lectio run`, index_after_batch and the alerts count the source as failed, with this line.
    assert entry_failure(result.all_events) == failed.description
