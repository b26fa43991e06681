"""Every check button the UI offers works or is not offered. Dagster 1.13 cannot execute a
partitioned asset's checks without materialising the partition, yet the checks tab's "Execute all"
is on for each check that is an execution set of its own, and on `embeddings` it launched a run
without a partition that failed ("Cannot access partition_key for a non-partitioned run") and
alerted. Asked as the webserver asks (GraphQL, against the code location loaded in process), no
per-source check is offered alone, and the launch "Execute all" sent is refused before any run."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance
from dagster_graphql.test.utils import execute_dagster_graphql

from tests.dagster_internals import in_process_workspace
from pipelines.home import prepare_dagster_env
from tests.conftest import PROJECT

pytestmark = [pytest.mark.slow, pytest.mark.network]

# What the asset page's checks tab asks of each check (ExecuteChecksButton's fragment).
CHECKS_QUERY = """
query {
  assetNodes {
    assetKey { path }
    isPartitioned
    assetChecksOrError { ... on AssetChecks { checks { name canExecuteIndividually jobNames } } }
  }
}
"""
# The UI's launch mutation, asking for the message of whatever error it answers.
LAUNCH = """
mutation($executionParams: ExecutionParams!) {
  launchPipelineExecution(executionParams: $executionParams) {
    __typename
    ... on Error { message }
    ... on LaunchRunSuccess { run { runId } }
  }
}
"""


@pytest.fixture(scope="module")
def ui(settings, database):
    prepare_dagster_env(settings, database)
    instance = DagsterInstance.get()
    with in_process_workspace(instance, "pipelines.definitions", "defs", str(PROJECT), "lectio") as workspace:
        yield instance, workspace.create_request_context()


def _checks(context) -> dict[str, tuple[bool, list[dict]]]:
    nodes = execute_dagster_graphql(context, CHECKS_QUERY).data["assetNodes"]
    return {"/".join(n["assetKey"]["path"]): (n["isPartitioned"], n["assetChecksOrError"]["checks"]) for n in nodes}


def test_no_check_of_a_partitioned_asset_is_offered_alone(ui):
    _, context = ui
    checks = _checks(context)
    assert {c["name"] for c in checks["embeddings"][1]} == {"embedding_vectors"}
    for asset, (partitioned, asset_checks) in checks.items():
        for check in asset_checks if partitioned else ():
            # The UI disables Execute: "This check cannot execute without materializing the asset."
            assert check["canExecuteIndividually"] == "REQUIRES_MATERIALIZATION", (asset, check["name"])


def test_execute_all_on_the_embeddings_checks_is_refused_before_a_run(ui):
    """What the button would send if it were offered (an old UI, a hand-made request): the check
    alone, no asset, no partition. Refused with a message, and no run is created to fail."""
    instance, context = ui
    (check,) = _checks(context)["embeddings"][1]
    (location,) = context.code_location_names
    (repository,) = context.get_code_location(location).get_repositories()
    runs_before = instance.get_runs_count()
    result = execute_dagster_graphql(context, LAUNCH, {"executionParams": {
        "mode": "default", "executionMetadata": {}, "runConfigData": "{}",
        "selector": {"repositoryLocationName": location, "repositoryName": repository, "jobName": check["jobNames"][0],
                     "assetSelection": [],
                     "assetCheckSelection": [{"assetKey": {"path": ["embeddings"]}, "name": "embedding_vectors"}]},
    }})
    launched = result.data["launchPipelineExecution"]
    assert launched["__typename"] != "LaunchRunSuccess"
    assert "does not support subsetting" in launched["message"], launched
    assert instance.get_runs_count() == runs_before
