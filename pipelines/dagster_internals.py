"""Every name lectio's own code takes from Dagster's private modules, in one place: a Dagster
upgrade that moves one breaks this file's import, not a module that merely uses it. Checked
against Dagster 1.13.27; each has no public equivalent there (say why beside it); prefer a public
API wherever one appears. What only the tests take, to drive Dagster as its UI and daemon do, is
in tests/dagster_internals.py, so no lectio process imports it."""

# The tag under which a run records an asset's data version (read to tell unchanged inputs).
from dagster._core.definitions.data_version import DATA_VERSION_TAG  # noqa: F401
# A failure reported for a run whose process died (no public constructor for its event data).
from dagster._core.events import JobFailureData, RunFailureReason  # noqa: F401
# Backfills listed by status, for the index sensor's batches.
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus  # noqa: F401
# An in-process run recorded under the code location the UI shows (its origin and label).
from dagster._core.remote_origin import RemoteJobOrigin, RemoteRepositoryOrigin  # noqa: F401
# An ingest run queues its batch's index itself (pipelines.batches): the new run's origins, and the
# index_after_batch sensor's, whose stored state says whether it is on.
from dagster._core.origin import JobPythonOrigin  # noqa: F401
from dagster._core.remote_origin import RemoteInstigatorOrigin  # noqa: F401
from dagster._core.storage.tags import REPOSITORY_LABEL_TAG  # noqa: F401
# Tags under this prefix are left out of every run's tags in the UI's GraphQL (the Runs list, the
# run page), as Dagster's own bookkeeping is: the prefix is its only way to hide one.
from dagster._core.storage.tags import HIDDEN_TAG_PREFIX  # noqa: F401
from dagster._core.workspace.load import location_origins_from_yaml_paths  # noqa: F401
# The compute log manager Dagster uses by default, which lectio's extends (pipelines.compute_logs):
# marked public, but exported only from its private module.
from dagster._core.storage.local_compute_log_manager import LocalComputeLogManager  # noqa: F401

# The pickled-file storage FilesystemIOManager makes, which lectio's step storage extends only to
# word the line it logs for a missing partition (pipelines.definitions): exported privately only.
from dagster._core.storage.fs_io_manager import PickledObjectFilesystemIOManager  # noqa: F401

# An observable source asset as the assets definition Dagster makes of it, which takes owners
# (observable_source_asset takes none).
from dagster._core.definitions.external_asset import create_external_asset_from_source_asset  # noqa: F401

# The logger Dagster's step planner writes to (its name is all lectio uses of it).
ACTIVE_PLAN_LOGGER = "dagster._core.execution.plan.active"
