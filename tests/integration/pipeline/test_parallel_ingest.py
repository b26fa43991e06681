"""Ingest partitions run side by side, each run in a process of its own as the daemon's run
launcher starts them (and all of a run's steps in that process: the ingest job's in-process
executor), sharing what such runs must share: the database with its embedding cache, and the
asset storage the steps hand their outputs through."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance

from lectio.index.schema import ensure_schema
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow, pytest.mark.network]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROJECT = Path(__file__).resolve().parents[3]
PARTITIONS = ["par-guide", "par-rota"]
# One partition's ingest run with the job's own executor, printing the run id.
RUN = """
import sys
from dagster import DagsterInstance, execute_job, reconstructable
from pipelines.definitions import ingest_job
config = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
result = execute_job(reconstructable(ingest_job), instance=DagsterInstance.get(), run_config=config,
                     tags={"dagster/partition": sys.argv[1]})
print(result.run_id)
"""


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


def test_two_source_partitions_ingest_at_once_each_in_one_process(instance, settings, database, tmp_path, monkeypatch):
    shutil.copy(FIXTURES / "staff_guide.md", tmp_path / "guide.md")
    (tmp_path / "rota.txt").write_text("Parallel rota\n\nMonday: the hall is swept and the chairs stacked.\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text(
        "sources:\n"
        "  - {id: par-guide, kind: document, format: markdown, path: guide.md, acl: ['group:staff']}\n"
        "  - {id: par-rota, kind: document, format: text, path: rota.txt, acl: [public]}\n"
    )
    # Each partition's run in a process of its own, as the daemon's run launcher starts them; the
    # run rebuilds the job from the environment, so it names this sources file.
    monkeypatch.setenv("LECTIO_SOURCES", str(sources))
    launched = [subprocess.Popen([sys.executable, "-c", RUN, partition], cwd=PROJECT, stdout=subprocess.PIPE, text=True)
                for partition in PARTITIONS]
    run_ids = [process.communicate(timeout=1800)[0].strip().splitlines()[-1] for process in launched]
    assert all(process.returncode == 0 for process in launched)

    pids = []
    for run_id, partition in zip(run_ids, PARTITIONS):
        assert instance.get_run_by_id(run_id).is_success, partition
        steps = [e for e in instance.all_logs(run_id) if e.dagster_event_type == DagsterEventType.STEP_SUCCESS]
        assert {"raw_texts", "parsed_structure", "chunks", "embeddings"} <= {e.step_key for e in steps}
        # Every step of a run ran in the run's one process (imports and model loaded once) …
        (pid,) = {e.dagster_event.pid for e in steps}
        pids.append(pid)
    assert len(set(pids)) == len(PARTITIONS)  # … and the two runs in two processes, side by side
    assert set(PARTITIONS) <= instance.get_materialized_partitions(AssetKey("embeddings"))
    # Both runs' vectors landed in the one shared cache, read back through the shared storage.
    hashes = [h for partition in PARTITIONS for h in _stored_chunks(settings, partition)["content_hash"]]
    with database.connect() as conn:
        ensure_schema(conn)
        cached = conn.execute("SELECT count(*) FROM embedding_cache WHERE content_hash = ANY(%s)", (hashes,)).fetchone()[0]
    assert cached == len(set(hashes)) > 2
    # Each run's process opened the embedded server (the library it comes from would widen the
    # folders above its data): the home is still closed to listing.
    assert settings.home.stat().st_mode & 0o044 == 0


def _stored_chunks(settings, partition: str):
    """A partition's chunks as the steps handed them on: the IO manager's file for it."""
    with open(settings.storage_dir / "chunks" / partition, "rb") as handle:
        return pickle.load(handle)
