"""Dagster assets: the lineage raw texts → parsed structure → chunks → sizes → embeddings → index →
evaluation → live index. The partitioned groups are made from the sources file (build_source_assets,
build_index_assets); the migration's and the training's are declared once, each group given by
its module as it is loaded."""

from dagster import load_assets_from_modules

from assets import migration, training
from assets.index import build_index_assets
from assets.source_assets import build_source_assets

migration_assets = load_assets_from_modules([migration], group_name="migration")
training_assets = load_assets_from_modules([training], group_name=training.TRAINING_GROUP)

__all__ = ["build_index_assets", "build_source_assets", "migration_assets", "training_assets"]
