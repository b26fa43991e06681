"""Data-quality asset checks (issue 5). Filled in by the quality work; empty until then."""

from dagster import PartitionsDefinition


def build_asset_checks(partitions_def: PartitionsDefinition) -> list:
    return []
