"""The index says what changed since a source's latest read (issue 63, item 14).

After an ingest tagged with a model (lectio/embed_model), an index build with another model called
the source failed because "its entry or file changed after its latest read", though only the
model had: the team went looking for an edit nobody made. The build now names the model each
was embedded with; a real edit of the file is still named as one."""

from __future__ import annotations

import json
import shutil

import pytest
from dagster import DagsterEventType, DagsterInstance

from assets.index import SOURCES_CHECK
from assets.names import INDEX_JOB, INGEST_JOB, MODEL_TAG
from lectio.embedding.packaged import MODEL_NAME, adapted_dir, model_path
from lectio.training.embedder.registry import RECORD
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow]

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
ADAPTED = f"{MODEL_NAME}-adapted-0123456789ab"


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-stale-reasons-home-") as home:
        prepare_dagster_env(home.settings, home.database)
        # An adapted embedder of the home, as `lectio model adapt` stores one (the packaged weights
        # themselves: what matters here is its id, not what training would have taught it).
        folder = adapted_dir(home.settings.home) / ADAPTED
        shutil.copytree(model_path(MODEL_NAME), folder)
        (folder / RECORD).write_text(json.dumps({"id": ADAPTED, "trained_at": "2026-12-01T00:00:00+00:00"}))
        yield home


def _failed_sources(result) -> str:
    (evaluation,) = [e.event_specific_data for e in result.all_events if e.event_type == DagsterEventType.ASSET_CHECK_EVALUATION
                     and e.event_specific_data.check_name == SOURCES_CHECK]
    assert not evaluation.passed
    return evaluation.description


def test_a_model_tagged_ingest_is_named_for_its_model_and_an_edit_for_the_file(home, monkeypatch):
    # torch, not ONNX: the adapted copy would be exported first, which this test does not need.
    monkeypatch.setenv("LECTIO_EMBED_BACKEND", "torch")
    instance = DagsterInstance.get()
    defs = build_definitions(home.settings.sources_file)
    ingest, index = defs.resolve_job_def(INGEST_JOB), defs.resolve_job_def(INDEX_JOB)
    assert ingest.execute_in_process(run_config=QUIET, instance=instance, partition_key="guide").success
    tagged = ingest.execute_in_process(run_config=QUIET, instance=instance, partition_key="rota",
                                       tags={MODEL_TAG: ADAPTED})
    assert tagged.success

    said = _failed_sources(index.execute_in_process(run_config=QUIET, instance=instance))
    assert "rota: the embedding model changed after its latest read" in said, said
    assert f"embedded it with {ADAPTED}@trained; this build embeds with {MODEL_NAME}@" in said, said
    assert "entry" not in said and "file" not in said, said

    # Read again with the home's model, then edited: the file is what changed, and nothing else.
    assert ingest.execute_in_process(run_config=QUIET, instance=instance, partition_key="rota").success
    (home.folder / "rota.txt").write_text("Volunteer rota\n\nSunday: the urn is in the vestry.\n")
    said = _failed_sources(index.execute_in_process(run_config=QUIET, instance=instance))
    assert "rota: its entry, file or ruleset changed after its latest read" in said and "model" not in said, said
