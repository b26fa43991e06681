"""A `lectio run` killed with -9 leaves its run STARTED, where Dagster's run monitoring does not
look (no launcher started it); the fail_orphaned_runs sensor fails it, which frees its slot of the
run queue."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, DefaultSensorStatus, RunsFilter, build_sensor_context

from tests.dagster_internals import IN_PROGRESS_RUN_STATUSES, monitor_started_run
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from assets.names import INGEST_JOB
from pipelines.run_owners import owner_tags

pytestmark = [pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROJECT = Path(__file__).resolve().parents[3]
SOURCES = "sources:\n  - {id: orphan-guide, kind: document, format: markdown, path: staff_guide.md, acl: ['group:staff']}\n"


def test_a_killed_lectio_run_has_its_started_run_failed_and_its_queue_slot_freed(home_factory):
    with home_factory("lectio-orphan-", lambda: SOURCES, files=[FIXTURES / "staff_guide.md"]) as home:
        prepare_dagster_env(home.settings, home.database)
        with DagsterInstance.get() as instance, home.connect() as holder:
            # The embedding cache held: the run's embeddings step waits on it, so the run is
            # certainly still STARTED when its process is killed.
            with holder.transaction():
                holder.execute("LOCK TABLE embedding_cache IN ACCESS EXCLUSIVE MODE")
                process = subprocess.Popen([sys.executable, "-m", "cli", "run"], cwd=PROJECT,
                                           env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                try:
                    run = _started_run(instance, process)
                finally:
                    process.kill()
                    process.wait()

            # Killed, the run stays STARTED and takes a slot of the run queue; Dagster's own run
            # monitoring cannot ask any launcher about it, and leaves it so (for 4 h).
            assert run.run_id in _in_progress(instance)
            monitor_started_run(instance, instance.get_run_record_by_id(run.run_id), logging.getLogger("test"))
            assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED
            free_before = _free_slots(instance)

            defs = build_definitions(home.settings.sources_file)
            sensor = defs.resolve_sensor_def("fail_orphaned_runs")
            assert sensor.default_status == DefaultSensorStatus.RUNNING  # on without the operator
            tick = sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
            assert run.run_id in tick.skip_message

            failed = instance.get_run_by_id(run.run_id)
            assert failed.status == DagsterRunStatus.FAILURE
            # Re-executable from the UI (its Re-execute, and the GraphQL API's): the run names its code
            # location, which a killed `lectio run` never recorded itself.
            assert failed.remote_job_origin is not None
            assert failed.remote_job_origin.repository_origin.repository_name == defs.get_repository_def().name
            (failure,) = instance.all_logs(run.run_id, of_type=DagsterEventType.RUN_FAILURE)
            assert run.run_id in failure.message and f"process {process.pid}" in failure.message
            assert "orphan-guide" in failure.message
            assert run.run_id not in _in_progress(instance)
            assert _free_slots(instance) == free_before + 1
            # A run whose process still runs (this test's) is left alone.
            own = str(uuid.uuid4())
            alive = instance.create_run_for_job(job_def=defs.resolve_job_def(INGEST_JOB), status=DagsterRunStatus.STARTED,
                                                run_id=own, tags=owner_tags(own))
            # So is a re-execution of the killed run (the UI's Re-execute): Dagster copies the
            # parent's tags, owner tags of the dead process among them, to a run another process runs.
            again = instance.create_run_for_job(job_def=defs.resolve_job_def(INGEST_JOB), status=DagsterRunStatus.STARTED,
                                                tags=run.tags)
            sensor.evaluate_tick(build_sensor_context(instance=instance, definitions=defs))
            assert instance.get_run_by_id(alive.run_id).status == DagsterRunStatus.STARTED
            assert instance.get_run_by_id(again.run_id).status == DagsterRunStatus.STARTED
            instance.delete_run(alive.run_id)
            instance.delete_run(again.run_id)


def _started_run(instance, process):
    """The run the `lectio run` in `process` is executing, once it is STARTED."""
    deadline = time.monotonic() + 900
    while True:
        records = instance.get_run_records(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED]))
        if records:
            return records[0].dagster_run
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, "the lectio run never started a run"
        time.sleep(0.2)


def _in_progress(instance) -> set[str]:
    """The runs the run queue counts against max_concurrent_runs."""
    return {r.dagster_run.run_id for r in instance.get_run_records(filters=RunsFilter(statuses=IN_PROGRESS_RUN_STATUSES))}


def _free_slots(instance) -> int:
    return instance.get_concurrency_config().run_queue_config.max_concurrent_runs - len(_in_progress(instance))
