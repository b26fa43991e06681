"""The index-migration job and the evaluation assets (issues 4 and 6). Empty until built."""

from dagster import PartitionsDefinition


def build_migration_assets(partitions_def: PartitionsDefinition) -> list:
    return []


def build_migration_jobs(assets: list) -> list:
    return []
