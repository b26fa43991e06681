"""Every name the tests take from Dagster's private modules, in one place, for the reason
pipelines/dagster_internals.py gives for lectio's own: what the UI, the daemon and `dagster dev` do
has no public API, and the tests drive Dagster as they do. What is slow to import (the daemon,
half a second; the CLI) is imported when first called."""

import asyncio
import logging

from dagster import AssetCheckKey, AssetKey, DagsterInstance

# A run failed as the run queue fails one it cannot start: its error in an engine event.
from dagster._core.errors import DagsterCodeLocationNotFoundError  # noqa: F401
from dagster._core.events import EngineEventData  # noqa: F401
from dagster._utils.error import serializable_error_info_from_exc_info  # noqa: F401
# A backfill made as the UI makes one.
from dagster._core.execution.backfill import PartitionBackfill  # noqa: F401
# A staleness or check status as the UI resolves it (only the UI's GraphQL layer has it public).
from dagster._core.definitions.data_version import CachingStaleStatusResolver
from dagster._core.event_api import PartitionKeyFilter
from dagster._core.loader import LoadingContextForTest
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionResolvedStatus
# The UI's "Observe" of an observable source asset (`materialize` of one observes nothing).
from dagster._core.definitions.observe import observe  # noqa: F401
# The run statuses the run queue counts against max_concurrent_runs.
from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES  # noqa: F401
# A code location loaded as the UI loads it: in process, or from workspace.yaml.
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget, WorkspaceFileTarget
# The definitions-state storage of the instance last entered: Dagster reads it whenever definitions
# load, and a context entered and never closed leaves it naming an instance that is gone.
from dagster._core.storage.defs_state.base import _current_storage as current_defs_state_storage  # noqa: F401


def check_status(instance: DagsterInstance, check_key: AssetCheckKey, partition: str) -> tuple[str, str]:
    """The run of a check's latest execution for `partition`, and what the UI shows for it."""
    (record,) = instance.event_log_storage.get_asset_check_execution_history(
        check_key, limit=1, partition_filter=PartitionKeyFilter(key=partition))
    status = asyncio.run(record.resolve_status(LoadingContextForTest(instance)))
    return record.run_id, AssetCheckExecutionResolvedStatus(status).value


def stale_statuses(instance: DagsterInstance, asset_graph, key: AssetKey, partitions) -> dict[str, str]:
    """What the UI shows of each partition of `key`: MISSING, STALE or FRESH."""
    resolver = CachingStaleStatusResolver(instance, asset_graph, LoadingContextForTest(instance))
    return {partition: resolver.get_status(key, partition).value for partition in partitions}


def in_process_workspace(instance: DagsterInstance, module: str, attribute: str, directory: str,
                         location: str) -> WorkspaceProcessContext:
    """The UI's workspace of one code location, `module.attribute`, loaded in this process."""
    origin = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name=module, attribute=attribute, working_directory=directory),
        location_name=location)
    return WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget([origin]))


def file_workspace(instance: DagsterInstance, workspace_yaml: str) -> WorkspaceProcessContext:
    """The UI's workspace as `dagster dev` loads it: each code location of workspace_yaml in its
    own gRPC server."""
    return WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[workspace_yaml]))


def run_coordinator(interval_seconds: int):
    """The daemon that dequeues queued runs (dagster.yaml's queue limits apply); its
    `run_iteration(workspace)` is one pass of it."""
    from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

    return QueuedRunCoordinatorDaemon(interval_seconds=interval_seconds)


def monitor_started_run(instance: DagsterInstance, run_record, logger: logging.Logger) -> None:
    """One pass of Dagster's own run monitoring over a STARTED run, as its daemon makes it."""
    from dagster._daemon.monitoring import run_monitoring

    run_monitoring.monitor_started_run(instance, None, run_record, logger)


def sensor_daemon_pass_seconds() -> float:
    """How often the sensor daemon comes round (its loop's least time; not configurable)."""
    from dagster._daemon.sensor import MIN_INTERVAL_LOOP_TIME

    return MIN_INTERVAL_LOOP_TIME


def dev_command():
    """`dagster dev`'s click command (calling its callback emits the notices `lectio dev` filters)."""
    from dagster._cli import dev

    return dev.dev_command
