"""A re-executed `lectio run` run is not filed under `lectio run` (issue 62, item 8).

Dagster copies every tag of a run to its re-execution: a `lectio run` run re-executed from the UI
kept `lectio/launched_by: lectio run`, so the Runs list filtered by it counted a run the UI had
launched, and the dead process's four owner tags sat on both runs' rows. The copied tag is now
corrected as the re-execution starts, naming the run it re-executes, and the owner tags are hidden
from the UI's GraphQL, as Dagster's own bookkeeping tags are."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, ReexecutionOptions, RunsFilter, execute_job, reconstructable
from dagster_graphql.test.utils import execute_dagster_graphql

from assets.names import INGEST_JOB, LAUNCHED_BY_TAG
from pipelines.definitions import build_definitions, ingest_job
from pipelines.home import prepare_dagster_env
from pipelines.run_owners import OWNER_PID_TAG, OWNER_RUN_TAG
from pipelines.runners import _execute
from tests.dagster_internals import in_process_workspace

PROJECT = Path(__file__).resolve().parents[3]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
RUN_TAGS = """
query RunTags($runId: ID!) {
  runOrError(runId: $runId) { ... on Run { tags { key value } } }
}"""


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


@pytest.fixture()
def gone_source(tmp_path, monkeypatch) -> Path:
    """A sources file whose one source has no file: its run stops at its entry, reading nothing."""
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - {id: relabel-gone, kind: document, format: text, path: gone.txt, acl: [public]}\n")
    monkeypatch.setenv("LECTIO_SOURCES", str(sources))  # ingest_job, rebuilt from the environment
    return sources


def _shown_tags(instance, run_id: str) -> dict[str, str]:
    """A run's tags as the Runs list and the run page get them."""
    with in_process_workspace(instance, "pipelines.definitions", "defs", str(PROJECT), "lectio") as workspace:
        result = execute_dagster_graphql(workspace.create_request_context(), RUN_TAGS, {"runId": run_id})
    return {tag["key"]: tag["value"] for tag in result.data["runOrError"]["tags"]}


def test_a_re_executed_lectio_run_run_is_not_filed_under_lectio_run(instance, gone_source):
    defs = build_definitions(gone_source)
    parent = _execute(defs, INGEST_JOB, instance, tags={LAUNCHED_BY_TAG: "lectio run"}, partition_key="relabel-gone",
                      run_config=QUIET)
    parent_run = instance.get_run_by_id(parent.run_id)
    assert parent_run.tags[LAUNCHED_BY_TAG] == "lectio run" and parent_run.tags[OWNER_RUN_TAG] == parent.run_id

    # The UI's Re-execute: every tag of the parent copied to a run another process executes.
    child = execute_job(reconstructable(ingest_job), instance, tags=parent_run.tags, run_config=QUIET,
                        reexecution_options=ReexecutionOptions(parent_run_id=parent.run_id))

    tags = instance.get_run_by_id(child.run_id).tags
    assert tags[LAUNCHED_BY_TAG] == f"re-execution of lectio run's run {parent.run_id[:8]}"
    filed = {r.run_id for r in instance.get_runs(filters=RunsFilter(tags={LAUNCHED_BY_TAG: "lectio run"}))}
    assert parent.run_id in filed and child.run_id not in filed
    # The owner tags stay on the runs, for fail_orphaned_runs, and are no longer shown.
    shown = _shown_tags(instance, parent.run_id)
    assert shown[LAUNCHED_BY_TAG] == "lectio run" and OWNER_PID_TAG in parent_run.tags
    assert not [key for key in shown if "owner" in key], shown
