"""Dagster assets: the lineage raw texts → parsed structure → chunks → sizes → embeddings → index."""

from assets.index import build_index_assets
from assets.source_assets import build_source_assets
from assets.training import build_training_assets

__all__ = ["build_index_assets", "build_source_assets", "build_training_assets"]
