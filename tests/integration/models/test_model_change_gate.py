"""A model change from the home's files goes live only through the migration gate.

The home's model choice (ACTIVE.json of the adapted embedders, or the runtime record backend.json)
sets the model id the runs launched from the UI embed with, and a plain, untagged `build_index`
then switched that model's version in without the gate: a rule change was held back for it, a model
change was not. Now a build whose vectors differ from the live version's is held back like a rule
change, and index_after_batch hands it to gate_candidate, which scores it under the model
tolerances (no drop beyond noise) before anything goes live."""

from __future__ import annotations

import json
import shutil
import time

import pytest
from dagster import DagsterInstance, build_sensor_context

from assets.names import AWAITS_GATE_TAG, GATE_JOB, INDEX_JOB, INGEST_JOB, MODEL_TAG
from lectio.embedding.packaged import ACTIVE, MODEL_NAME, adapted_dir, home_choice, model_path
from lectio.evaluation.migration_gate import MODEL_TOLERANCES
from lectio.index import versions
from lectio.training.embedder.registry import RECORD
from pipelines.batches import index_cursor
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow]

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
ADAPTED = f"{MODEL_NAME}-adapted-0123456789ab"
SOURCES = ("guide", "rota")


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-model-gate-home-") as home, pytest.MonkeyPatch.context() as patch:
        # torch, not ONNX: the adapted copy would be exported first, which this test does not need.
        patch.setenv("LECTIO_EMBED_BACKEND", "torch")
        prepare_dagster_env(home.settings, home.database)
        # An adapted embedder of the home, as `lectio model adapt` stores one (the packaged weights
        # themselves: what matters here is its id, not what training would have taught it).
        folder = adapted_dir(home.settings.home) / ADAPTED
        shutil.copytree(model_path(MODEL_NAME), folder)
        (folder / RECORD).write_text(json.dumps({"id": ADAPTED, "trained_at": "2026-12-01T00:00:00+00:00"}))
        yield home


def _live(home):
    with home.connect() as conn:
        return versions.get_version(conn)


def _ingest_all(defs, instance) -> None:
    for source in SOURCES:
        assert defs.resolve_job_def(INGEST_JOB).execute_in_process(
            instance=instance, partition_key=source, run_config=QUIET).success


def _tick(defs, instance, cursor=None):
    return defs.resolve_sensor_def("index_after_batch").evaluate_tick(build_sensor_context(
        instance=instance, cursor=cursor, definitions=defs, resources=defs.resources))


def _query_set(home, monkeypatch) -> None:
    """A query set of the home's own, as the project's only one (a UI run may gate on the
    project's sets alone). Labelled query sets name verses, which two documents do not hold: both
    versions score alike, and the test is of what gates the model change and under which
    tolerances, not of how it scores."""
    from lectio.evaluation import migration_gate

    folder = home.folder / "queries"
    folder.mkdir(exist_ok=True)
    query = {"id": "q1", "query": "who makes the tea after the Sunday service", "relevant": ["phil_4_6"]}
    (folder / "documents.jsonl").write_text(json.dumps(query) + "\n")
    monkeypatch.setattr(migration_gate, "QUERY_SETS_DIR", folder)
    monkeypatch.setattr(migration_gate, "DEFAULT_QUERY_SETS", (str(folder / "documents.jsonl"),))


def test_a_model_chosen_in_the_home_goes_live_only_through_the_gate(home, monkeypatch):
    instance = DagsterInstance.get()
    defs = build_definitions(home.settings.sources_file)
    _ingest_all(defs, instance)
    assert defs.resolve_job_def(INDEX_JOB).execute_in_process(instance=instance, run_config=QUIET).success
    before = _live(home)
    assert before.model_id.startswith(f"{MODEL_NAME}@")
    _query_set(home, monkeypatch)

    # An edit of the home's model choice; the sources re-ingested with it, untagged, as the
    # source_changes sensor asks for them once their fingerprints (which hold the model) move.
    (adapted_dir(home.settings.home) / ACTIVE).write_text(json.dumps({"id": ADAPTED}) + "\n")
    # A run launched from the UI loads the code location in a process of its own: so do these.
    defs = build_definitions(home.settings.sources_file)
    since = index_cursor(time.time())
    _ingest_all(defs, instance)
    (request,) = _tick(defs, instance, since).run_requests
    assert request.job_name == INDEX_JOB and MODEL_TAG not in request.tags
    built = defs.resolve_job_def(INDEX_JOB).execute_in_process(
        instance=instance, run_config={**QUIET, **request.run_config}, tags=request.tags)

    # Built beside the live version and held back, named for the model change.
    metadata = built.asset_materializations_for_node("search_index")[0].metadata
    candidate = metadata["version"].value
    assert candidate != before.version and not metadata["live"].value and _live(home).version == before.version
    assert metadata["awaits_gate"].value and instance.get_run_by_id(built.run_id).tags[AWAITS_GATE_TAG] == candidate
    decision = metadata["decision"].value
    assert f"the embedding model changed ({before.model_id} -> {ADAPTED}@" in decision, decision
    assert "goes live only through the migration gate" in decision, decision

    # The sensor hands it to the gate, which holds it to the model tolerances.
    (gate,) = _tick(defs, instance).run_requests
    assert gate.job_name == GATE_JOB and gate.run_config["ops"]["index_evaluation"]["config"]["candidate"] == candidate
    gated = defs.resolve_job_def(GATE_JOB).execute_in_process(
        instance=instance, run_config={**QUIET, **gate.run_config}, tags=gate.tags)
    result = gated.output_for_node("live_index")
    assert result["candidate"] == candidate and result["tolerances"] == MODEL_TOLERANCES
    # No worse (the same weights under another id), so the gate switches it in, and the home follows.
    assert result["switched"] and _live(home).version == candidate and home_choice(home.settings.home) == ADAPTED
