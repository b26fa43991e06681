"""A model's name is bounded wherever one is asked for (issue 63, item 9): a 60 KB
`lectio/embed_model` tag was accepted at launch and failed its run with a 120 KB error line (the
tag echoed twice), and `lectio migrate --embedder` echoed its value whole. Each door now refuses a
name longer than any model's in one short line that gives its length, not the name."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance

from assets.names import INGEST_JOB, MODEL_TAG
from assets.outcomes import root_cause
from cli import main as cli
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
HUGE = "m" * 60_000


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-long-tags-home-") as home:
        prepare_dagster_env(home.settings, home.database)
        yield home


def test_a_run_tagged_with_a_60_kb_model_fails_at_its_start_in_one_short_line(home):
    defs = build_definitions(home.settings.sources_file)
    run = defs.resolve_job_def(INGEST_JOB).execute_in_process(
        instance=DagsterInstance.get(), partition_key="rota", run_config=QUIET, raise_on_error=False,
        tags={MODEL_TAG: HUGE})
    assert not run.success
    step, said = root_cause(run.all_events)
    assert step is None  # before any step: nothing was read or stored
    assert len(said) < 200 and "\n" not in said, said[:300]
    assert f"tag {MODEL_TAG}: 60,000 characters, and a model's name has at most 100" in said


def test_lectio_migrate_with_a_60_kb_embedder_is_one_short_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LECTIO_HOME", str(tmp_path / "home"))
    assert cli(["migrate", "--embedder", HUGE]) == 2
    said = capsys.readouterr().err
    assert said == "lectio migrate: --embedder: 60,000 characters, and a model's name has at most 100\n", said[:300]
