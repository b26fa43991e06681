from __future__ import annotations

from pathlib import Path

import psycopg
from dagster import ConfigurableResource

from lectio.index import store
from lectio.index.database import ensure_database
from lectio.embedding.model import Embedder
from lectio.settings import Settings, load_settings


class LectioResource(ConfigurableResource):
    """Where the sources file is, and connections to the database lectio indexes into."""

    sources_file: str

    @property
    def sources_path(self) -> Path:
        return Path(self.sources_file)

    def settings(self) -> Settings:
        return load_settings()

    def connect(self) -> psycopg.Connection:
        conn = ensure_database(self.settings()).connect()
        store.ensure_schema(conn)
        return conn

    def embedder(self) -> Embedder:
        return Embedder()
