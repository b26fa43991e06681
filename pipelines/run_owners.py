"""Runs that a process executes itself (`lectio run`, `lectio migrate`) carry that process's
identity, and the `fail_orphaned_runs` sensor fails those whose process is gone; and the code
location the UI knows their job by (ui_origin), recorded on each when it ends, so the UI can
re-execute it.

Dagster's run monitoring (dagster.yaml) asks the run launcher whether a run's worker still lives:
the default launcher cannot tell, and a run executed in process was never launched at all. A
`lectio run` killed with -9 therefore left its run STARTED until max_runtime_seconds (4 h): it
held a slot of max_concurrent_runs (and, for an index build, the one `lectio/stage: index` slot),
so every run from the UI, a schedule or a sensor waited QUEUED behind it.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache

import psutil
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter
from lectio.settings import PROJECT_ROOT
from assets.names import COMMANDS, LAUNCHED_BY_TAG
from pipelines.dagster_internals import (HIDDEN_TAG_PREFIX, JobFailureData, RemoteJobOrigin, RemoteRepositoryOrigin,
                                        RunFailureReason, location_origins_from_yaml_paths)

# Hidden: bookkeeping for the fail_orphaned_runs sensor, which cluttered every `lectio run` run's
# row in the Runs list with four tags nobody filters by.
OWNER_MACHINE_TAG = f"{HIDDEN_TAG_PREFIX}lectio_owner_machine"
OWNER_PID_TAG = f"{HIDDEN_TAG_PREFIX}lectio_owner_pid"
OWNER_STARTED_TAG = f"{HIDDEN_TAG_PREFIX}lectio_owner_started"  # the process's start time (epoch seconds)
# The run the process executes. Dagster copies a run's tags to its re-execution (the UI's
# Re-execute), which another process executes: tags naming a run other than the one they are on
# were copied, and prove nothing about that run's process.
OWNER_RUN_TAG = f"{HIDDEN_TAG_PREFIX}lectio_owner_run"
# Two start times of one process, as psutil reads them at different moments, differ by rounding
# only; a new process that reused the pid started later than its run did.
SAME_START_SECONDS = 1.0


@lru_cache(maxsize=1)
def this_machine() -> str:
    """This host and PID namespace: a pid names the same process only to a process that shares
    both (a container has its own, and may share a hostname)."""
    host = socket.gethostname()
    try:
        return f"{host} {os.readlink('/proc/self/ns/pid')}"
    except OSError:  # no procfs (macOS): the hostname alone
        return host


def owner_tags(run_id: str) -> dict[str, str]:
    """Tags naming this process, for the run `run_id` it executes itself."""
    me = psutil.Process()
    return {OWNER_MACHINE_TAG: this_machine(), OWNER_PID_TAG: str(me.pid), OWNER_STARTED_TAG: f"{me.create_time():.2f}",
            OWNER_RUN_TAG: run_id}


def owner_gone(run: DagsterRun) -> str | None:
    """Why the process that executed `run` is known to be gone, or None: it still runs, or it is
    not one this process can see (no owner tags: the daemon launched the run; tags copied from
    another run, as a re-execution has; another machine or container), which Dagster's own
    monitoring is left to."""
    tags = run.tags
    if tags.get(OWNER_RUN_TAG) != run.run_id or tags.get(OWNER_MACHINE_TAG) != this_machine():
        return None
    pid, started = int(tags[OWNER_PID_TAG]), float(tags[OWNER_STARTED_TAG])
    try:
        process = psutil.Process(pid)
        if abs(process.create_time() - started) < SAME_START_SECONDS and process.status() != psutil.STATUS_ZOMBIE:
            return None
    except psutil.NoSuchProcess:
        pass
    return f"process {pid}, which executed it, ended (killed or crashed) before the run did"


def executed_by_live_process(run: DagsterRun) -> bool:
    """Whether `run` is one a process executed itself (`lectio run`, `lectio migrate`) and that
    process may still be at work: it runs, or it is one this process cannot see. Not a run whose
    owner tags were copied from another (a re-execution), nor one whose process is gone."""
    return run.tags.get(OWNER_RUN_TAG) == run.run_id and owner_gone(run) is None


def copied_launcher(run: DagsterRun) -> str | None:
    """What `run`'s LAUNCHED_BY_TAG should read where Dagster copied it from the run it re-executes
    (the UI's Re-execute copies every tag), or None where it is the run's own. Copied, it filed a
    run the UI or the daemon executed under `lectio run`, and the Runs filter by that tag with it."""
    command = run.tags.get(LAUNCHED_BY_TAG)
    if command not in COMMANDS or run.tags.get(OWNER_RUN_TAG) == run.run_id:
        return None
    return f"re-execution of {command}'s run {(run.root_run_id or run.parent_run_id or '?')[:8]}"


def relabel_reexecution(instance: DagsterInstance, run: DagsterRun | None) -> None:
    """Corrects a re-executed run's copied LAUNCHED_BY_TAG as the run starts (Dagster offers no
    way to leave a tag out of a re-execution, nor to remove one)."""
    if run is not None and (label := copied_launcher(run)):
        instance.add_run_tags(run.run_id, {LAUNCHED_BY_TAG: label})


def ui_origin(repository: str, job_name: str) -> RemoteJobOrigin:
    """The job as the UI knows it: in the code location that workspace.yaml (`lectio dev`) names."""
    return RemoteJobOrigin(RemoteRepositoryOrigin(_workspace_location(), repository), job_name)


@lru_cache(maxsize=1)
def _workspace_location():
    # Read once per process: a `lectio run` records it on every run it executes.
    (location,) = location_origins_from_yaml_paths([str(PROJECT_ROOT / "workspace.yaml")])
    return location


def fail_orphaned_runs(instance: DagsterInstance, repository: str | None = None) -> list[str]:
    """Mark failed every STARTED run whose executing process is gone; one message per run failed.
    Its process records a run's origin once the run ends (pipelines.runners), which a killed one
    never did: it is recorded here, in `repository`, so the UI's Re-execute finds the job (without
    it, Dagster answered a CheckError)."""
    failed = []
    for record in instance.get_run_records(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED])):
        run = record.dagster_run
        reason = owner_gone(run)
        if reason is None:
            continue
        run = instance.get_run_by_id(run.run_id)  # it may have ended since it was listed
        if run is None or run.status != DagsterRunStatus.STARTED:
            continue
        message = f"run {run.run_id} of {_job(run)} marked failed: {reason}; run it again"
        instance.report_run_failed(run, message, JobFailureData(error=None, failure_reason=RunFailureReason.UNEXPECTED_TERMINATION))
        if run.remote_job_origin is None and repository:
            instance.run_storage.replace_job_origin(run, ui_origin(repository, run.job_name))
        failed.append(message)
    return failed


def _job(run: DagsterRun) -> str:
    partition = run.tags.get("dagster/partition")
    return f"{run.job_name} (source {partition})" if partition else run.job_name
