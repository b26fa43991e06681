"""The Dagster code location: assets partitioned by the sources of the sources file, and jobs."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import (
    Definitions,
    ExecutorDefinition,
    Failure,
    ResourceDefinition,
    IOManagerDefinition,
    SourceAsset,
    StaticPartitionsDefinition,
)

from assets import build_index_assets, build_source_assets, migration_assets, training_assets
from assets.checks import build_asset_checks
from assets.source_assets import OWNERS
from lectio.embedding.packaged import NameTooLong, bounded_name
from lectio.settings import Settings, load_settings
from lectio.sources import source_ids
from pipelines.batches import request_index_now
from pipelines.dagster_internals import PickledObjectFilesystemIOManager, create_external_asset_from_source_asset
from pipelines.jobs import INGEST_EXECUTOR, build_jobs
from pipelines.run_owners import relabel_reexecution
from pipelines.schedules import build_schedules
from pipelines.sensors import build_sensors
from assets.names import INGEST_JOB, MODEL_TAG
from resources import CorpusResource, DatabaseResource, EmbedderResource


def lectio_resources(settings: Settings, sources_file: Path) -> dict:
    """The resources, fixed by the deployment (its environment and the sources file the code
    location was loaded with) and offered to no run's config. The sources file decides who may
    read what; a launchpad field for it, or for the home, corpus folder or database, let anyone
    who reached the UI publish any file the code location can read to anonymous search."""
    def env(name: str, value) -> str | None:
        return os.environ.get(name) or (str(value) if value is not None else None)

    resources = {
        "corpus": CorpusResource(sources_file=str(sources_file), corpus_dir=env("LECTIO_CORPUS_DIR", settings.corpus_dir)),
        "database": DatabaseResource(home=env("LECTIO_HOME", settings.home), url=env("DATABASE_URL", None)),
    }
    embedder = EmbedderResource(backend=env("LECTIO_EMBED_BACKEND", None))
    return {**{key: _fixed(value) for key, value in resources.items()}, "embedder": _per_run(embedder)}


class StepOutputs(PickledObjectFilesystemIOManager):
    """Dagster's pickled files, with lectio's words for a source the index finds nothing stored
    for: Dagster's own line ("Couldn't load partition … allow_missing_partitions=True") read as a
    fault of the build, once per failed source, in every build."""

    def get_missing_partition_log_message(self, partition_key: str) -> str:
        return (f"source {partition_key!r}: nothing stored from a successful run of this stage; the build "
                "counts it as failed (every_source_indexed names it, with what it carries instead)")

    def dump_to_path(self, context, obj, path) -> None:
        try:
            super().dump_to_path(context, obj, path)
        except OSError as exc:
            # A full disk's OSError names no file: the step's failure says which output it was.
            raise OSError(exc.errno, f"could not store {path}: {exc.strerror}") from exc


def _fixed_storage(folder: Path) -> IOManagerDefinition:
    """The steps' stored outputs under the home, with an empty config schema as _fixed: they hold
    chunks and their ACLs, so a launchpad `base_dir` would let a run load pickles, and the ACLs in
    them, from any folder the code location can read. Every step of every job stores through it,
    so a run comes here before its first step: where a re-executed run's launched-by tag was
    copied from a `lectio run` run, it is corrected here (pipelines.run_owners)."""
    def made(context):
        relabel_reexecution(context.instance, context.run)
        return StepOutputs(base_dir=str(folder))

    return IOManagerDefinition(resource_fn=made, config_schema={},
                               description="Stored step outputs under the home's storage folder.")


def _fixed(resource, description: str | None = None) -> ResourceDefinition:
    """`resource` as it is, with an empty config schema: a run config that names any field of it
    is refused before the run starts (hardcoded_resource would accept and ignore anything)."""
    return ResourceDefinition(resource_fn=lambda _: resource, config_schema={},
                              description=description or type(resource).__doc__)


def _per_run(embedder: EmbedderResource) -> ResourceDefinition:
    """The embedder as _fixed, made for each run: a run tagged with a model (MODEL_TAG, a backfill
    launched as a migration) embeds with it, and a tag naming no model of the home fails the run
    at its start."""
    def made(context):
        tag = context.run.tags.get(MODEL_TAG) if context.run is not None else None
        try:
            return embedder.with_model(bounded_name(tag, f"tag {MODEL_TAG}"))
        except NameTooLong as exc:
            raise Failure(str(exc)) from None
        except ValueError as exc:
            raise Failure(f"tag {MODEL_TAG}={tag!r}: {exc}") from None

    return ResourceDefinition(resource_fn=made, config_schema={}, description=type(embedder).__doc__)


def _owned(asset):
    """An observed source asset given the owners the materialized ones declare themselves."""
    if not isinstance(asset, SourceAsset):
        return asset
    return create_external_asset_from_source_asset(asset).map_asset_specs(
        lambda spec: spec.replace_attributes(owners=OWNERS))


def build_definitions(sources_file: Path | None = None, ingest_executor: ExecutorDefinition = INGEST_EXECUTOR) -> Definitions:
    """The code location; `ingest_executor` exists for benchmarks/ui_run_time.py's comparison."""
    settings = load_settings()
    sources_file = Path(sources_file or settings.sources_file).resolve()
    partitions = StaticPartitionsDefinition(source_ids(sources_file))
    source_assets = [_owned(a) for a in build_source_assets(partitions)]
    index_assets = build_index_assets(partitions)
    jobs = build_jobs(index_assets, migration_assets, ingest_executor)
    return Definitions(
        assets=[*source_assets, *index_assets, *migration_assets, *training_assets],
        asset_checks=build_asset_checks(partitions),
        jobs=list(jobs.values()),
        schedules=build_schedules(jobs, partitions.get_partition_keys()),
        sensors=build_sensors(jobs),
        resources={
            **lectio_resources(settings, sources_file),
            "io_manager": _fixed_storage(settings.storage_dir),
            # What the embeddings step asks as it ends: its batch's index, where it ends the batch.
            "index_requests": _fixed(request_index_now, "Asks for the batch's index as the ingest run that ends it "
                                                        "ends (pipelines.batches)."),
        },
    )


def ingest_job():
    """The ingest job rebuilt from the environment (LECTIO_SOURCES, LECTIO_HOME), for
    `execute_job(reconstructable(ingest_job), …)` in a process of its own."""
    return build_definitions().resolve_job_def(INGEST_JOB)


defs = build_definitions()
