"""A wrong `lectio/embed_model` tag fails once, and its alert names it (issue 62, item 4).

A run tagged with a model the home does not have fails as its embedder is made, before any step
starts. The `index_after_batch` sensor then took it for a batch tagged with that model and launched
`migrate_index` with the same tag, which failed again; and the run-failure alert read "An exception
was thrown during execution", Dagster's words for a run that failed outside a step. Now a run that
failed before any step ran is no batch's (it read and stored nothing), and the alert carries the
root error: the tag and the models the home has."""

from __future__ import annotations

import json
import time

import pytest
from dagster import DagsterInstance, build_sensor_context

from assets.names import INDEX_JOB, INGEST_JOB, MODEL_TAG
from pipelines.batches import index_cursor
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env

pytestmark = [pytest.mark.slow, pytest.mark.network]

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture(scope="module")
def home(documents_home_factory):
    with documents_home_factory("lectio-bad-model-tag-home-") as home:
        prepare_dagster_env(home.settings, home.database)
        yield home


def _tick(defs, name: str, cursor=None):
    return defs.resolve_sensor_def(name).evaluate_tick(build_sensor_context(
        instance=DagsterInstance.get(), cursor=cursor, definitions=defs, resources=defs.resources))


def test_a_bad_model_tag_fails_its_run_once_and_the_alert_names_it(home, monkeypatch):
    alerts = home.folder / "alerts.jsonl"
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(alerts))
    instance = DagsterInstance.get()
    defs = build_definitions(home.settings.sources_file)
    since = index_cursor(time.time())
    failures = _tick(defs, "alert_on_failed_runs").cursor  # watching failed runs from now on

    bad = defs.resolve_job_def(INGEST_JOB).execute_in_process(
        instance=instance, partition_key="rota", run_config=QUIET, raise_on_error=False,
        tags={MODEL_TAG: "nothing-adapted"})

    assert not bad.success
    # No index is asked for the run: it failed before any step ran, and read nothing.
    waiting = _tick(defs, "index_after_batch", since)
    assert not waiting.run_requests
    assert waiting.skip_message == ("1 ingest run(s) since the last index failed before any step ran, so nothing "
                                    "changed: no index asked for")
    # The alert names the root error, in one line.
    _tick(defs, "alert_on_failed_runs", failures)
    (alert,) = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert alert["run_id"] == bad.run_id and alert["partition"] == "rota"
    assert alert["message"].startswith(f"tag {MODEL_TAG}='nothing-adapted': no adapted embedder 'nothing-adapted'")
    assert "\n" not in alert["message"]

    # A good run after it is a batch of its own, the source not called failed for the bad one.
    assert defs.resolve_job_def(INGEST_JOB).execute_in_process(instance=instance, partition_key="rota",
                                                               run_config=QUIET).success
    (request,) = _tick(defs, "index_after_batch", since).run_requests
    assert request.job_name == INDEX_JOB and MODEL_TAG not in request.tags
    assert request.tags["lectio/after_runs"] == "1"
    assert request.run_config["ops"]["search_index"]["config"]["failed_sources"] == []
