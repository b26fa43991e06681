"""Preparing the Dagster instance of a LECTIO_HOME: its DAGSTER_HOME and storage URL."""

from __future__ import annotations

import os
import shutil

from lectio.index.database import Database
from lectio.settings import PROJECT_ROOT, Settings, secure_home


def prepare_dagster_env(settings: Settings, db: Database) -> dict[str, str]:
    """Write DAGSTER_HOME and return the environment Dagster processes need (also set here)."""
    secure_home(settings)
    shutil.copyfile(PROJECT_ROOT / "dagster.yaml", settings.dagster_home / "dagster.yaml")
    env = {
        "DAGSTER_HOME": str(settings.dagster_home),
        "LECTIO_DAGSTER_URL": db.dagster_url,
        "LECTIO_HOME": str(settings.home),
        "LECTIO_SOURCES": str(settings.sources_file),
    }
    os.environ.update(env)
    return env
