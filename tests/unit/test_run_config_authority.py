"""Who may read what is the deployment's to say, never a run's. A run launched from the UI once
set `resources.corpus.config.sources_file` to a file of its own (with `allow_outside: true` and
`acl: [public]`), published a root-only file to anonymous search and revoked every other
version; `writer_lock_held: true` let a build skip the writer lock beside a running writer;
`resources.io_manager.config.base_dir` was accepted too."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInvalidConfigError, validate_run_config

from pipelines.definitions import build_definitions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Every field the resources once offered a run, each pointed where an attacker would point it.
OVERRIDES = {
    "corpus": {"sources_file": "/tmp/evil/sources.yaml", "corpus_dir": "/"},
    "database": {"home": "/tmp/evil", "url": "postgresql://evil@/postgres"},
    "embedder": {"backend": "torch", "batch_size": 1},
    # The stored step outputs hold chunks and their ACLs: pickles from any readable folder.
    "io_manager": {"base_dir": "/tmp/evil"},
    # Whether the ingest run's last step asks for its batch's index: taken and ignored before.
    "index_requests": {"enabled": False, "index_job": "migrate_index"},
}


@pytest.fixture()
def defs(tmp_path, monkeypatch):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    return build_definitions(FIXTURES / "sources.yaml")


def _jobs(defs):
    return [defs.resolve_job_def(job.name) for job in defs.jobs if not job.name.startswith("__")]


@pytest.mark.parametrize("resource", sorted(OVERRIDES))
def test_no_job_takes_a_resource_from_run_config(defs, resource):
    jobs = _jobs(defs)
    assert len(jobs) >= 2
    for job in jobs:
        for field, value in OVERRIDES[resource].items():
            with pytest.raises(DagsterInvalidConfigError):
                validate_run_config(job, {"resources": {resource: {"config": {field: value}}}})


def test_no_run_config_says_the_writer_lock_is_held(defs):
    index = defs.resolve_job_def("build_index")
    validate_run_config(index, {"ops": {"search_index": {"config": {"switch_live": False}}}})
    with pytest.raises(DagsterInvalidConfigError):
        validate_run_config(index, {"ops": {"search_index": {"config": {"writer_lock_held": True}}}})


def test_the_resources_are_the_deployments(defs, tmp_path):
    corpus = defs.resources["corpus"]
    assert Path(corpus.resource_fn(None).sources_file) == FIXTURES / "sources.yaml"
    assert defs.resources["database"].resource_fn(None).home == str(tmp_path / "home")
