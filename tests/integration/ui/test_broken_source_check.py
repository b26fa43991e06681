"""A broken source stays on raw_texts' `source_entry` check while other sources build (issue 62, item 5).

Dagster's check page shows a partitioned check by its newest evaluation of any partition: once
another source's run passed its entry, the check read "Passed (rota)" and the broken source was
gone from it. Now every run that passes its own entry restates each other source still broken,
so the check the UI shows (asked here as the webserver asks, by GraphQL) keeps naming it, the
partition's status stays failed, and the team is alerted once, not once per run. Once the entry
is fixed and the source ingested, the check passes and nothing is restated."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance, build_sensor_context
from dagster_graphql.test.utils import execute_dagster_graphql

from assets.names import INGEST_JOB
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from tests.dagster_internals import in_process_workspace

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
GOOD = "{id: notice, kind: document, format: text, path: rota.txt, acl: [public]}"
NO_ACL = "{id: notice, kind: document, format: text, path: rota.txt}"
# What the checks tab of raw_texts asks of each check (its AssetCheckTableFragment, in part).
CHECK_QUERY = """
query {
  assetNodeOrError(assetKey: {path: ["raw_texts"]}) { ... on AssetNode { assetChecksOrError { ... on AssetChecks {
    checks { name
      executionForLatestMaterialization { status evaluation { partition description } }
      partitionStatuses { ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } }
    } } } } }
}
"""
MODULE = "lectio_broken_source_check_defs"


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-broken-check-home-") as home:
        sources = home.folder / "base.yaml"
        sources.write_text(sources.read_text() + f"  - {GOOD}\n")
        (home.folder / f"{MODULE}.py").write_text(
            f"from pipelines.definitions import build_definitions\ndefs = build_definitions({str(sources)!r})\n")
        prepare_dagster_env(home.settings, home.database)
        yield home


def _ingest(home, key: str) -> None:
    job = build_definitions(home.settings.sources_file).resolve_job_def(INGEST_JOB)
    assert job.execute_in_process(instance=DagsterInstance.get(), partition_key=key, run_config=QUIET).success


def _entry(home, entry: str) -> None:
    sources = home.settings.sources_file
    sources.write_text(sources.read_text().replace(GOOD, entry).replace(NO_ACL, entry))


def _shown(home, monkeypatch) -> dict:
    """The source_entry check as the UI shows it."""
    monkeypatch.syspath_prepend(str(home.folder))
    instance = DagsterInstance.get()
    with in_process_workspace(instance, MODULE, "defs", str(home.folder), "lectio") as workspace:
        result = execute_dagster_graphql(workspace.create_request_context(), CHECK_QUERY)
    assert not result.errors, result.errors
    checks = result.data["assetNodeOrError"]["assetChecksOrError"]["checks"]
    (check,) = [c for c in checks if c["name"] == "source_entry"]
    return check


def _alert_tick(cursor=None):
    defs = build_definitions()
    return defs.resolve_sensor_def("alert_on_failed_checks").evaluate_tick(build_sensor_context(
        instance=DagsterInstance.get(), cursor=cursor, definitions=defs, resources=defs.resources))


def test_a_broken_source_stays_on_the_entry_check_while_others_build(home, monkeypatch):
    alerts = home.folder / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(alerts))
    for key in ("rota", "notice", "guide"):
        _ingest(home, key)
    watching = _alert_tick().cursor  # the alert sensor watches from now on

    _entry(home, NO_ACL)
    _ingest(home, "notice")  # ends successfully, its entry check failed
    _ingest(home, "rota")  # another source builds after it
    _ingest(home, "guide")

    check = _shown(home, monkeypatch)
    latest = check["executionForLatestMaterialization"]
    assert latest["status"] == "FAILED" and latest["evaluation"]["partition"] == "notice", latest
    assert "acl" in latest["evaluation"]["description"]
    assert check["partitionStatuses"]["failedPartitions"] == ["notice"]
    assert sorted(check["partitionStatuses"]["succeededPartitions"]) == ["guide", "rota"]
    # Alerted once for the source, however many runs restated it.
    _alert_tick(watching)
    sent = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert [(a["check"], a["partition"]) for a in sent] == [("source_entry", "notice")], sent

    _entry(home, GOOD)
    _ingest(home, "notice")
    _ingest(home, "rota")
    check = _shown(home, monkeypatch)
    assert check["executionForLatestMaterialization"]["status"] == "SUCCEEDED"
    assert check["executionForLatestMaterialization"]["evaluation"]["partition"] == "rota"
    assert check["partitionStatuses"]["failedPartitions"] == []
