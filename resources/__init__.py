"""Dagster resources over lectio's domain."""

from resources.lectio import CorpusResource, DatabaseResource, EmbedderResource

__all__ = ["CorpusResource", "DatabaseResource", "EmbedderResource"]
