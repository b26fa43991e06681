"""Preparing the Dagster instance of a LECTIO_HOME: its DAGSTER_HOME, storage URL and pools."""

from __future__ import annotations

import os
import shutil

from dagster import DagsterInstance

from lectio.index.database import Database
from lectio.settings import PROJECT_ROOT, Settings, secure_home
from assets.names import EMBED_POOL, INDEX_POOL


def prepare_dagster_env(settings: Settings, db: Database) -> dict[str, str]:
    """Write DAGSTER_HOME, give lectio's pools their limit, and return the environment Dagster
    processes need (also set here)."""
    secure_home(settings)
    shutil.copyfile(PROJECT_ROOT / "dagster.yaml", settings.dagster_home / "dagster.yaml")
    env = {
        "DAGSTER_HOME": str(settings.dagster_home),
        "LECTIO_DAGSTER_URL": db.dagster_url,
        "LECTIO_HOME": str(settings.home),
        "LECTIO_SOURCES": str(settings.sources_file),
    }
    os.environ.update(env)
    _prepare_pools()
    return env


def _prepare_pools() -> None:
    """lectio's pools given dagster.yaml's default limit now, not at the first dequeue: Dagster
    1.13's run queue reads the configured pools before it sets a new one to the default, so its
    first pass over a new pool's runs started them all (two ingest runs embedding at once). A
    limit already set (`dagster instance concurrency set`) is left as it is."""
    with DagsterInstance.get() as instance:
        storage = instance.event_log_storage
        known = storage.get_concurrency_keys()
        for pool in (INDEX_POOL, EMBED_POOL):
            if pool not in known:
                storage.initialize_concurrency_limit_to_default(pool)
