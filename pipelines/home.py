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


# A pooled storage connection: recycled after an hour, as the webserver's; no statement timeout,
# as the storage's own default engine has none.
POOL_RECYCLE_S, POOL_OVERFLOW = 3600, 4


def executing_instance() -> DagsterInstance:
    """The instance a lectio process executes its own runs against, its storage holding a pooled
    connection. Dagster's PostgreSQL storage opens a connection for every call by default (none
    kept, so a long-lived UI process does not accumulate them); a `lectio run` makes thousands of
    calls, each run's events one by one, and connecting was a quarter of a run over 30 one-paragraph
    sources (7,000 connections). The webserver's setting is the one Dagster offers for this."""
    instance = DagsterInstance.get()
    instance.optimize_for_webserver(statement_timeout=0, pool_recycle=POOL_RECYCLE_S, max_overflow=POOL_OVERFLOW)
    return instance


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
