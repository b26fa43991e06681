"""The code location's jobs: ingest one source, build the index, and the migration's two
(migrate_index, gate_candidate), each selecting the assets it runs by their keys."""

from __future__ import annotations

from dagster import AssetSelection, ExecutorDefinition, RunConfig, define_asset_job, in_process_executor

from assets.index import IndexConfig
from assets.names import GATE_JOB, INDEX_JOB, INGEST_ASSETS, INGEST_JOB, MIGRATE_JOB, STAGE_TAG
from assets.source_assets import SOURCE_INPUTS

# One source's ingest runs in one process, wherever it is launched (UI, daemon, `lectio run`):
# its steps follow each other, so the multiprocess executor's process per step bought nothing
# and cost each step a fresh Python importing Dagster, pandas and torch and loading the model
# (14-18 s per step). Parallelism is across sources: one run each (docs/operations.md).
INGEST_EXECUTOR = in_process_executor


def build_jobs(index_assets: list, migration_assets: list, ingest_executor: ExecutorDefinition = INGEST_EXECUTOR) -> dict:
    """Every job by its name; `ingest_executor` exists for benchmarks/ui_run_variants.py's comparison."""
    migration_keys = [a.key for a in migration_assets]
    jobs = [
        # source_inputs is observed first in each run: raw_texts then records the observation of the
        # entry it reads, so the next Observe does not call it Unsynced (it did when the entry had
        # changed since the last observation, the run reading the new one).
        define_asset_job(INGEST_JOB, selection=[SOURCE_INPUTS, *INGEST_ASSETS], executor_def=ingest_executor,
                         description="Read, parse, chunk and embed one source (a partition), in one process."),
        # In one process too: its steps take under a second each, where the multiprocess executor
        # spent about 4 s starting their processes (a check of 0.2 s took 3.7 s). One build at a
        # time is search_index's concurrency pool (dagster.yaml); the tag names the stage.
        define_asset_job(INDEX_JOB, selection=index_assets, tags={STAGE_TAG: "index"},
                         executor_def=in_process_executor,
                         description="Size distribution and a new index version from every source."),
        define_asset_job(
            MIGRATE_JOB,
            selection=AssetSelection.assets("search_index", *migration_keys),
            config=RunConfig(ops={"search_index": IndexConfig(switch_live=False)}),
            description="Build the index from the chunks of every source as a candidate beside the live one, "
                        "score both, and switch only if the candidate is no worse (run after re-ingesting "
                        "sources with new rules).",
        ),
        define_asset_job(GATE_JOB, selection=AssetSelection.assets(*migration_keys),
                         description="Score the live index and the last built candidate, and gate the switch."),
    ]
    return {job.name: job for job in jobs}
