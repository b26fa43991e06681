"""Dagster resources: thin handles on the lectio domain (settings, database, model)."""

from resources.lectio import LectioResource

__all__ = ["LectioResource"]
