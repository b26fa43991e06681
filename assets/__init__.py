"""Dagster assets: the lineage raw texts → parsed structure → chunks → sizes → embeddings → index →
evaluation → live index. The partitioned groups are made from the sources file (build_source_assets,
build_index_assets); the migration's group is declared once, the group given by its module."""

from dagster import load_assets_from_modules

from assets import migration
from assets.index import build_index_assets
from assets.source_assets import build_source_assets
from assets.training import build_training_assets

MIGRATION_ASSETS = load_assets_from_modules([migration], group_name="migration")

__all__ = ["MIGRATION_ASSETS", "build_index_assets", "build_source_assets", "build_training_assets"]
