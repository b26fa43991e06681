"""`lectio run` and the `index_after_batch` sensor agree on who builds (issue 62, item 3).

`lectio run` executes one ingest run per source in process, holding the database's writer lock,
and builds the index after the last. Between two of its runs nothing is queued or running, so the
sensor took the finished ones for a batch and launched `build_index`, which failed on that lock
(WriterBusy, a stack trace, and with the run-failure alert on, a page to the team). Now the sensor
skips, saying why, for as long as the command is at work, and its index covers what it ran."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context

pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-cli-batch-home-") as home:
        yield home


def _tick(sources: Path):
    from pipelines.definitions import build_definitions

    defs = build_definitions(sources)
    return defs.resolve_sensor_def("index_after_batch").evaluate_tick(build_sensor_context(
        instance=DagsterInstance.get(), definitions=defs, resources=defs.resources))


def test_the_sensor_leaves_the_batch_of_lectio_run_to_it(home):
    from pipelines.runners import run_main

    ticks = {}

    def echo(line: str) -> None:
        # Between the command's in-process runs: after the first source, and before the index.
        if line.startswith(("[2/2]", "index:")):
            ticks[line.split()[0]] = _tick(home.settings.sources_file)

    report = run_main(home.settings, echo=echo)

    assert report.ok and report.index["live"], report.to_json()
    assert set(ticks) == {"[2/2]", "index:"}
    for tick in ticks.values():
        assert not tick.run_requests
        assert tick.skip_message.startswith("lectio run (process ") and "builds its own index" in tick.skip_message
    # Once it has ended, its index covers its runs: nothing is left for the sensor.
    assert _tick(home.settings.sources_file).skip_message == "no ingest run finished since the last index"


def test_a_killed_lectio_run_leaves_its_runs_to_the_sensor(home):
    """A command killed between its runs builds no index: its runs are then a batch like any other."""
    import subprocess
    import sys
    import uuid

    import psutil
    from dagster import DagsterRunStatus

    from assets.names import INDEX_JOB, INGEST_JOB, LAUNCHED_BY_TAG
    from pipelines.definitions import build_definitions
    from pipelines.run_owners import OWNER_MACHINE_TAG, OWNER_PID_TAG, OWNER_RUN_TAG, OWNER_STARTED_TAG, this_machine

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    started = psutil.Process(gone.pid).create_time()
    gone.wait()
    run_id = str(uuid.uuid4())
    owner = {OWNER_MACHINE_TAG: this_machine(), OWNER_PID_TAG: str(gone.pid), OWNER_STARTED_TAG: f"{started:.2f}",
             OWNER_RUN_TAG: run_id}
    # What the killed command left: its last ingest run, ended, and no index run after it.
    DagsterInstance.get().create_run_for_job(
        job_def=build_definitions(home.settings.sources_file).resolve_job_def(INGEST_JOB), run_id=run_id,
        status=DagsterRunStatus.SUCCESS, tags={LAUNCHED_BY_TAG: "lectio run", "dagster/partition": "rota", **owner})

    (request,) = _tick(home.settings.sources_file).run_requests
    assert request.job_name == INDEX_JOB and request.tags["lectio/after_batches"] == f"run-{run_id[:8]}"


def test_a_process_that_ran_lectio_run_and_lives_on_leaves_the_batch_to_the_sensor(home):
    """A Python caller (or a test session) that ran a command lives on after it: its last ingest
    run, executed by this live process, no longer holds the batch once the writer lock is free."""
    import uuid

    from dagster import DagsterRunStatus

    from assets.names import INDEX_JOB, INGEST_JOB, LAUNCHED_BY_TAG
    from pipelines.definitions import build_definitions
    from pipelines.run_owners import owner_tags

    run_id = str(uuid.uuid4())
    DagsterInstance.get().create_run_for_job(
        job_def=build_definitions(home.settings.sources_file).resolve_job_def(INGEST_JOB), run_id=run_id,
        status=DagsterRunStatus.SUCCESS,
        tags={LAUNCHED_BY_TAG: "lectio run", "dagster/partition": "rota", **owner_tags(run_id)})

    (request,) = _tick(home.settings.sources_file).run_requests
    assert request.job_name == INDEX_JOB and f"run-{run_id[:8]}" in request.tags["lectio/after_batches"]
