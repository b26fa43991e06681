"""Which STARTED runs fail_orphaned_runs may judge, and when their process counts as gone."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
from dagster import DagsterRun

from pipelines.run_owners import OWNER_MACHINE_TAG, OWNER_PID_TAG, OWNER_STARTED_TAG, owner_gone

RUN_ID = "0b6d2a1e-0000-4000-8000-000000000001"


def owner_tags() -> dict[str, str]:
    from pipelines.run_owners import owner_tags as of_run

    return of_run(RUN_ID)


def _run(tags: dict[str, str], run_id: str = RUN_ID) -> DagsterRun:
    return DagsterRun(job_name="ingest_source", run_id=run_id, tags=tags)


def test_a_run_of_this_living_process_is_not_gone():
    assert owner_gone(_run(owner_tags())) is None


def test_a_run_of_an_ended_process_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    tags = {**owner_tags(), OWNER_PID_TAG: str(child.pid),
            OWNER_STARTED_TAG: f"{psutil.Process(child.pid).create_time():.2f}"}
    assert owner_gone(_run(tags)) is None  # waiting on its input
    child.communicate(b"")
    assert owner_gone(_run(tags)) == f"process {child.pid}, which executed it, ended (killed or crashed) before the run did"


def test_a_pid_taken_by_a_later_process_is_gone():
    # This process's pid, but a start time an hour before it: the run's own process has ended.
    tags = {**owner_tags(), OWNER_STARTED_TAG: f"{float(owner_tags()[OWNER_STARTED_TAG]) - 3600:.2f}"}
    assert owner_gone(_run(tags)) is not None


def test_runs_it_cannot_see_are_left_to_dagster():
    # No owner tags (the daemon launched it), or another machine or container, where a pid means nothing here.
    assert owner_gone(_run({})) is None
    assert owner_gone(_run({**owner_tags(), OWNER_MACHINE_TAG: "elsewhere pid:[1]", OWNER_PID_TAG: str(2**22 + os.getpid())})) is None


def test_owner_tags_copied_to_another_run_prove_nothing():
    # A re-execution carries its parent's tags: they name the parent's process and the parent's
    # run, and another process executes it. Its parent's process being gone says nothing about it.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    copied = {**owner_tags(), OWNER_PID_TAG: str(child.pid), OWNER_STARTED_TAG: "1.00"}
    assert owner_gone(_run(copied)) is not None  # the parent itself: its process is gone
    assert owner_gone(_run(copied, run_id="0b6d2a1e-0000-4000-8000-000000000002")) is None
