"""Where lectio keeps its state.

Everything a run writes (database files, Dagster home, downloaded corpus, caches) lives under
LECTIO_HOME, so two homes never see each other's state and a test can use a throwaway one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCES = PROJECT_ROOT / "data" / "sources.yaml"


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None  # an external server; None means the embedded one under home
    dagster_database_url: str | None
    corpus_dir: Path
    sources_file: Path

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def storage_dir(self) -> Path:
        """Where Dagster's IO manager keeps asset outputs."""
        return self.home / "storage"


def load_settings() -> Settings:
    home = Path(os.environ.get("LECTIO_HOME", ".lectio")).expanduser().resolve()
    # The corpus is large and identical for every home, so tests may share one download.
    corpus = os.environ.get("LECTIO_CORPUS_DIR")
    return Settings(
        home=home,
        database_url=os.environ.get("DATABASE_URL") or None,
        dagster_database_url=os.environ.get("DAGSTER_DATABASE_URL") or None,
        corpus_dir=Path(corpus).expanduser().resolve() if corpus else home / "corpus",
        sources_file=Path(os.environ.get("LECTIO_SOURCES", DEFAULT_SOURCES)).expanduser().resolve(),
    )
