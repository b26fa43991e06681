"""The UI path end to end, against the code location as the UI loads it (workspace.yaml, as
`lectio dev` does, in its own gRPC server):

- a partition launched through the instance, not in process: the UI's own GraphQL mutation
  submits the run to the run queue, one iteration of the daemon's queue loop dequeues it, and the
  DefaultRunLauncher starts its worker in another process; the index then follows it untagged;
- `lectio run`'s in-process runs found by the query the job page's Runs tab sends."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from dagster import DagsterInstance, DagsterRunStatus, build_sensor_context
from dagster_graphql.client.query import LAUNCH_PIPELINE_EXECUTION_MUTATION, LAUNCH_PIPELINE_REEXECUTION_MUTATION
from dagster_graphql.test.utils import execute_dagster_graphql

from lectio.index import schema, versions
from pipelines.batches import index_cursor
from tests.dagster_internals import file_workspace, run_coordinator
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from assets.names import EMBED_POOL, INDEX_JOB, INDEX_REQUESTED_TAG, INGEST_JOB
from pipelines.run_owners import OWNER_PID_TAG, owner_tags
from pipelines.runners import run_main

pytestmark = [pytest.mark.slow, pytest.mark.network]

PROJECT = Path(__file__).resolve().parents[3]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# Loading the code location imports torch and the model code; a loaded 2-core machine took 100 s.
DEADLINE_S = 600


def _workspace(instance, sources: Path):
    """The code location of workspace.yaml in its own gRPC server, loaded with `sources` (the
    server, and each run worker it starts, inherit the environment as it is at this moment)."""
    saved = os.environ["LECTIO_SOURCES"]
    os.environ["LECTIO_SOURCES"] = str(sources)
    try:
        return file_workspace(instance, str(PROJECT / "workspace.yaml"))
    finally:
        os.environ["LECTIO_SOURCES"] = saved


@pytest.fixture(scope="module")
def ui(settings, database, tmp_path_factory):
    """One code location for the module (loading it is most of each test's time), with two small
    sources of a file of its own: `ui-rota` for the launch, `ui-notice` for lectio run."""
    prepare_dagster_env(settings, database)
    instance = DagsterInstance.get()
    folder = tmp_path_factory.mktemp("ui-path")
    stamp = time.time_ns()  # new text, so the index built from it is a new version
    (folder / "rota.txt").write_text(f"Volunteer rota {stamp}\n\nSunday: tea and coffee after the service.\n")
    (folder / "notice.txt").write_text(f"Notice {stamp}\n\nThe hall is closed on Monday.\n")
    sources = folder / "sources.yaml"
    sources.write_text("sources:\n"
                       "  - {id: ui-rota, kind: document, format: text, path: rota.txt, acl: [public]}\n"
                       "  - {id: ui-notice, kind: document, format: text, path: notice.txt, acl: [public]}\n")
    with _workspace(instance, sources) as workspace:
        yield instance, workspace, sources


def _launch_from_ui(workspace, job: str, partition: str) -> str:
    """What the UI's Materialize button sends: launchPipelineExecution with the partition's tag."""
    context = workspace.create_request_context()
    (location,) = context.code_location_names
    (repository,) = context.get_code_location(location).get_repositories()
    result = execute_dagster_graphql(context, LAUNCH_PIPELINE_EXECUTION_MUTATION, {"executionParams": {
        "selector": {"repositoryLocationName": location, "repositoryName": repository, "jobName": job},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
    }})
    launched = result.data["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _wait_until_finished(instance, workspace, run_id: str):
    """Dequeue the run as the daemon does (dagster.yaml's queue limits apply), then poll it."""
    daemon = run_coordinator(interval_seconds=1)
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run.is_finished:
            return run
        if run.status == DagsterRunStatus.QUEUED:
            list(daemon.run_iteration(workspace))
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} still {instance.get_run_by_id(run_id).status.value} after {DEADLINE_S} s")


def _workers_gone(instance, run_ids: list[str], timeout: float = 60) -> None:
    """Wait for the processes that ran these runs to exit: a run reads finished before its worker
    has closed, and a worker still alive when the session's server stops retries its connection."""
    pids = {e.dagster_event.pid for r in run_ids for e in instance.all_logs(r) if e.is_dagster_event} - {os.getpid()}
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = {pid for pid in pids if _alive(pid)}
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has exited; its parent reaps it


def _one_embeds_at_a_time(instance, workspace, run_ids: list[str]) -> None:
    """Item 10: two queued ingest runs and two free run slots, yet the daemon's queue starts only
    the first: both embed, and the `lectio_embed` pool (dagster.yaml's default limit) holds one."""
    assert {instance.get_run_by_id(r).status for r in run_ids} == {DagsterRunStatus.QUEUED}
    assert all(EMBED_POOL in instance.get_run_by_id(r).run_op_concurrency.all_pools for r in run_ids)
    list(run_coordinator(interval_seconds=1).run_iteration(workspace))
    first, second = (instance.get_run_by_id(r).status for r in run_ids)
    assert first != DagsterRunStatus.QUEUED and second == DagsterRunStatus.QUEUED, (first, second)


def test_a_partition_launched_from_the_ui_is_indexed_without_tags(ui, database, foreign_sources):
    instance, workspace, sources = ui
    since = index_cursor(time.time())
    with database.connect() as conn:
        schema.ensure_schema(conn)
        live_before = versions.live_version(conn)

    # Both sources, so the index has every source and may go live.
    run_ids = [_launch_from_ui(workspace, INGEST_JOB, key) for key in ("ui-rota", "ui-notice")]
    _one_embeds_at_a_time(instance, workspace, run_ids)
    for run_id in run_ids:
        run = _wait_until_finished(instance, workspace, run_id)
        assert run.status == DagsterRunStatus.SUCCESS
        # Launched, not executed here: its origin is the code location and its steps ran elsewhere.
        assert run.remote_job_origin is not None and not run.tags.get("lectio/batch")
        pids = {e.dagster_event.pid for e in instance.all_logs(run_id) if e.is_dagster_event}
        assert pids and os.getpid() not in pids

    # The sensor, with no batch tag on the run, asks for the index with nothing failed.
    defs = build_definitions(sources)
    sensor = defs.resolve_sensor_def("index_after_batch")
    tick = sensor.evaluate_tick(build_sensor_context(instance=instance, cursor=since, definitions=defs,
                                                     resources=defs.resources))
    assert len(tick.run_requests) == 1, tick.skip_message
    (request,) = tick.run_requests
    assert set(request.tags["lectio/after_batches"].split(",")) == {f"run-{run_id[:8]}" for run_id in run_ids}
    assert request.run_config["ops"]["search_index"]["config"]["failed_sources"] == []

    index = defs.resolve_job_def(INDEX_JOB).execute_in_process(
        run_config={**QUIET, **request.run_config}, instance=instance, tags=request.tags)
    built = index.asset_materializations_for_node("search_index")[0].metadata
    assert built["sources"].value == "ui-notice, ui-rota" and not built["reused_existing_version"].value
    with database.connect() as conn:
        live = versions.live_version(conn)
    assert live == built["version"].value and live != live_before


def test_with_the_index_sensor_on_the_run_that_ends_its_batch_queues_the_index_itself(ui, database, foreign_sources):
    """No wait for the sensor daemon's next pass: the launched run's last step creates and queues
    the batch's index run (the sensor's own rule), tags itself with it, and the sensor then asks
    for nothing more; the index run, dequeued as the daemon does, builds from the new text."""
    instance, workspace, sources = ui
    context = workspace.create_request_context()
    (location,) = context.code_location_names
    (repository,) = context.get_code_location(location).get_repositories().values()
    sensor = repository.get_sensor("index_after_batch")
    defs = build_definitions(sources)
    (folder := sources.parent / "rota.txt").write_text(f"Volunteer rota {time.time_ns()}\n\nTea after the service.\n")
    instance.start_sensor(sensor)
    try:
        since = index_cursor(time.time())
        run = _wait_until_finished(instance, workspace, _launch_from_ui(workspace, INGEST_JOB, "ui-rota"))
        assert run.status == DagsterRunStatus.SUCCESS
        index_id = run.tags[INDEX_REQUESTED_TAG]
        index_run = instance.get_run_by_id(index_id)
        assert index_run.job_name == INDEX_JOB and index_run.tags["lectio/requested_by"] == run.run_id
        assert index_run.status == DagsterRunStatus.QUEUED and index_run.remote_job_origin is not None
        tick = defs.resolve_sensor_def("index_after_batch").evaluate_tick(build_sensor_context(
            instance=instance, cursor=since, definitions=defs, resources=defs.resources))
        assert not tick.run_requests and tick.skip_message == "no ingest run finished since the last index"
    finally:
        instance.stop_sensor(sensor.get_remote_origin_id(), sensor.selector_id, sensor)
    built = _wait_until_finished(instance, workspace, index_id)
    assert built.status == DagsterRunStatus.SUCCESS, built.status
    _workers_gone(instance, [run.run_id, index_id])
    with database.connect() as conn:
        rows = versions.version_chunks(conn, versions.live_version(conn))
    assert folder.read_text().splitlines()[0] in " ".join(rows["text"])


# The Runs tab of a job page (PipelineRunsFeedRoot in the UI) filters by the job's name and the
# hidden repository label tag; the Overview timeline places a run by its repositoryOrigin.
JOB_PAGE_RUNS = """
query JobPageRuns($filter: RunsFilter!) {
  runsOrError(filter: $filter) {
    ... on Runs { results { runId repositoryOrigin { repositoryLocationName repositoryName } } }
  }
}"""


def test_lectio_runs_runs_are_on_their_job_pages(ui, settings, monkeypatch, foreign_sources):
    instance, workspace, sources = ui
    monkeypatch.setenv("LECTIO_SOURCES", os.environ["LECTIO_SOURCES"])  # run_main points it at `sources`
    report = run_main(dataclasses.replace(settings, sources_file=sources), echo=lambda _: None)
    assert not report.failed and report.index["ok"]

    context = workspace.create_request_context()
    (location,) = context.code_location_names
    (repository,) = context.get_code_location(location).get_repositories()
    for job, run_ids in ((INGEST_JOB, {o.run_id for o in report.sources}), (INDEX_JOB, {report.index["run_id"]})):
        page = {"pipelineName": job, "tags": [{"key": ".dagster/repository", "value": f"{repository}@{location}"}]}
        result = execute_dagster_graphql(context, JOB_PAGE_RUNS, {"filter": page})
        shown = {r["runId"]: r["repositoryOrigin"] for r in result.data["runsOrError"]["results"]}
        assert run_ids <= set(shown), (job, run_ids, set(shown))
        assert all(shown[run_id] == {"repositoryLocationName": location, "repositoryName": repository}
                   for run_id in run_ids)


def test_lectio_runs_runs_are_re_executed_by_every_route_the_ui_offers(ui, settings, monkeypatch, foreign_sources):
    instance, workspace, sources = ui
    monkeypatch.setenv("LECTIO_SOURCES", os.environ["LECTIO_SOURCES"])
    report = run_main(dataclasses.replace(settings, sources_file=sources), echo=lambda _: None)
    parent = next(o for o in report.sources if o.source_id == "ui-rota").run_id
    context = workspace.create_request_context()
    # The run page's Re-execute (ReexecutionParams) and the older route (ExecutionParams naming the parent).
    (location,) = context.code_location_names
    (repository,) = context.get_code_location(location).get_repositories()
    routes = [{"reexecutionParams": {"parentRunId": parent, "strategy": "ALL_STEPS"}},
              {"executionParams": {
                  "selector": {"repositoryLocationName": location, "repositoryName": repository, "jobName": INGEST_JOB},
                  "executionMetadata": {"parentRunId": parent, "rootRunId": parent,
                                        "tags": [{"key": "dagster/partition", "value": "ui-rota"}]}}}]
    for variables in routes:
        result = execute_dagster_graphql(context, LAUNCH_PIPELINE_REEXECUTION_MUTATION, variables)
        launched = result.data["launchPipelineReexecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run = _wait_until_finished(instance, workspace, launched["run"]["runId"])
        assert run.status == DagsterRunStatus.SUCCESS and run.parent_run_id == parent


def test_a_killed_lectio_run_failed_by_the_sensor_is_re_executed_from_the_ui(ui, foreign_sources):
    instance, workspace, sources = ui
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_id = str(uuid.uuid4())
    # What a `lectio run` killed in its ingest run leaves: a STARTED run naming its dead process,
    # and no origin (its process records that when the run ends).
    tags = {**owner_tags(run_id), OWNER_PID_TAG: str(dead.pid), "dagster/partition": "ui-rota"}
    defs = build_definitions(sources)
    killed = instance.create_run_for_job(job_def=defs.resolve_job_def(INGEST_JOB), run_id=run_id, tags=tags,
                                         status=DagsterRunStatus.STARTED)
    assert killed.remote_job_origin is None
    sensor = defs.resolve_sensor_def("fail_orphaned_runs")
    sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
    assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
    context = workspace.create_request_context()
    for strategy in ("FROM_FAILURE", "ALL_STEPS"):
        result = execute_dagster_graphql(context, LAUNCH_PIPELINE_REEXECUTION_MUTATION,
                                         {"reexecutionParams": {"parentRunId": run_id, "strategy": strategy}})
        launched = result.data["launchPipelineReexecution"]
        assert launched["__typename"] == "LaunchRunSuccess", (strategy, launched)
        run = _wait_until_finished(instance, workspace, launched["run"]["runId"])
        assert run.status == DagsterRunStatus.SUCCESS and run.parent_run_id == run_id
