"""The resources lectio's assets use: where the sources and the corpus are, the database, and
the embedding model. Each is configured once, in the Definitions, from the environment through
`EnvVar` where the value is a deployment's (so the UI shows the variable, never a password)."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Optional

import psycopg
from dagster import ConfigurableResource
from pydantic import PrivateAttr

from lectio.embedding.model import Embedder, configured_model
from lectio.index import schema
from lectio.index.database import Database, open_database
from lectio.sources import Source, SourceError, load_source, load_sources


class CorpusResource(ConfigurableResource):
    """The sources file a code location was loaded with, and where downloaded modules go."""

    sources_file: str
    corpus_dir: str

    @property
    def sources_path(self) -> Path:
        return Path(self.sources_file)

    @property
    def corpus_path(self) -> Path:
        return Path(self.corpus_dir)

    def source(self, source_id: str) -> Source:
        return load_source(self.sources_path, source_id)

    def sources(self) -> dict[str, Source | SourceError]:
        return load_sources(self.sources_path)


class DatabaseResource(ConfigurableResource):
    """The PostgreSQL lectio indexes into: `url` (DATABASE_URL) when set, else the embedded
    server under `home` (LECTIO_HOME), started on first use."""

    home: str
    url: Optional[str] = None
    _database: Optional[Database] = PrivateAttr(default=None)

    def connect(self) -> psycopg.Connection:
        return self._prepared().connect()

    def home_path(self) -> Path:
        """The home, where trained models and their training pairs are kept."""
        return Path(self.home)

    def _prepared(self) -> Database:
        """The server started, both databases created and the schema current, once per instance:
        Dagster makes one instance per run (per step process under a multiprocess executor) and
        per sensor tick, so a run's later connections only connect. Not in setup_for_execution:
        then every run would open the server at its start, and a run that fails reading its
        source would fail on the database instead."""
        if self._database is None:
            database = open_database(Path(self.home), self.url)
            with database.connect() as conn:
                schema.ensure_schema(conn)
            self._database = database
        return self._database


class EmbedderResource(ConfigurableResource):
    """The embedding model, loaded once per process that uses it. `backend` is the runtime that
    embeds (torch or onnx, LECTIO_EMBED_BACKEND in the Definitions); None leaves it to the
    domain's default: LECTIO_EMBED_BACKEND, else the one this machine measured fastest."""

    batch_size: int = 64
    backend: Optional[str] = None
    # The model a run's tag chose (with_model; pipelines.definitions), None: the home's.
    _tagged: Optional[str] = PrivateAttr(default=None)

    def with_model(self, name: str | None) -> EmbedderResource:
        """This resource embedding with `name` ("base", "latest" or an adapted embedder's id), a
        copy; itself where `name` is None. A ValueError where the home has no such model."""
        from lectio.settings import runtime_settings
        from lectio.training.embedder.registry import chosen

        if not name:
            return self
        tagged = EmbedderResource(batch_size=self.batch_size, backend=self.backend)
        tagged._tagged = chosen(runtime_settings().home, name)
        return tagged

    @property
    def tagged_model(self) -> Optional[str]:
        """The model this run's tag chose, None where the run embeds with the home's."""
        return self._tagged

    @cached_property
    def _embedder(self) -> Embedder:
        return Embedder(batch_size=self.batch_size, choice=configured_model(self.backend, self._tagged))

    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def model_id(self) -> str:
        """The id new embeddings are stored under; asking it loads no runtime (a sensor asks
        it every tick)."""
        return configured_model(self.backend, self._tagged).id
