"""Training is a deliberate act (issue 62, item 6).

*Materialize all* on the landing lineage took every group, the training group with it: one click
meant to rebuild the index also trained a reranker and fine-tuned the embedder. The UI launches it
as an asset backfill over every asset, whose daemon runs the unpartitioned assets in runs of their
own; each training step now reads its run's and its backfill's selection and refuses, before
anything trains, when either takes assets outside the training group. The training group on its own
(its *Materialize all*, or one of its assets) still trains."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus, build_sensor_context

from assets.names import REFUSED_TAG
from assets.training import TRAINING_ASSETS, TRAINING_GROUP, incidental_training
from pipelines.dagster_internals import BulkActionStatus
from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from tests.dagster_internals import PartitionBackfill

QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


@contextmanager
def _materialize_all(defs, instance) -> Iterator[PartitionBackfill]:
    """The backfill the landing lineage's *Materialize all* launches: every executable asset, every
    partition; ended as it leaves (no daemon runs it here, and an open backfill of ingest assets
    holds every later batch's index in the session's instance)."""
    graph = defs.get_repository_def().asset_graph
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=f"all{time.time_ns() % 10**8}", asset_graph=graph, partition_names=None,
        asset_selection=sorted(graph.executable_asset_keys), backfill_timestamp=time.time(), tags={},
        dynamic_partitions_store=instance, all_partitions=True, title=None, description=None, run_config=None)
    instance.add_backfill(backfill)
    try:
        yield backfill
    finally:
        instance.update_backfill(backfill.with_status(BulkActionStatus.CANCELED))


def test_materialize_all_refuses_the_training_group_before_anything_trains(instance, settings):
    defs = build_definitions(settings.sources_file)
    with _materialize_all(defs, instance) as backfill:
        _refused_in_the_backfill(defs, instance, backfill)


def _refused_in_the_backfill(defs, instance, backfill: PartitionBackfill) -> None:
    assert {AssetKey(name) for name in TRAINING_ASSETS} <= set(backfill.asset_selection)

    # The run the backfill daemon launches for the training assets, run in process.
    run = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[AssetKey(name) for name in TRAINING_ASSETS], run_config=QUIET,
        tags={"dagster/backfill": backfill.backfill_id}, raise_on_error=False)

    (failure,) = [e for e in run.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.message.strip()
    assert failure.step_key == "training_pairs" and "refused: training is a deliberate act" in message
    assert f"materialize the {TRAINING_GROUP} group on its own" in message and len(message.splitlines()) == 1
    assert not any(run.asset_materializations_for_node(name) for name in TRAINING_ASSETS)
    assert instance.get_run_by_id(run.run_id).tags[REFUSED_TAG] == f"materialize the {TRAINING_GROUP} group on its own"


def test_a_run_refused_at_training_after_it_built_something_alerts_naming_the_refusal(
        instance, settings, main_run, monkeypatch, tmp_path):
    """The walk of issue 62, D3: Materialize all's run built the index, then came to training_pairs
    and was refused; alert_on_failed_runs read it as "refused at its start …: nothing ran" and
    sent nothing. Only a run refused before any step of it succeeded is silent; this one alerts,
    the refusal its cause."""
    monkeypatch.setenv("LECTIO_ALERT_LOG", str(tmp_path / "alerts.jsonl"))
    defs = build_definitions(settings.sources_file)
    tick = lambda cursor: defs.resolve_sensor_def("alert_on_failed_runs").evaluate_tick(build_sensor_context(  # noqa: E731
        instance=instance, cursor=cursor, definitions=defs, resources=defs.resources))
    start = tick(None).cursor  # watching failed runs from now on
    run = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[AssetKey("chunk_size_distribution"), AssetKey("training_pairs")],
        run_config=QUIET, raise_on_error=False)
    assert run.asset_materializations_for_node("chunk_size_distribution")  # built, then refused
    (failure,) = [e for e in run.all_events if e.is_step_failure]
    assert failure.step_key == "training_pairs"
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE

    said = tick(start).skip_message
    assert said.startswith(f"alerted: training_pairs, run {run.run_id[:8]}: refused: training is a deliberate act"), said
    assert run.run_id in (tmp_path / "alerts.jsonl").read_text()


def test_a_run_that_trains_beside_other_groups_is_refused_and_the_group_alone_is_not():
    assert incidental_training(set(TRAINING_ASSETS), "reranker") is None
    assert incidental_training({"adapted_embedder"}, "adapted_embedder") is None
    problem = incidental_training({"search_index", "reranker"}, "reranker")
    assert problem is not None and "reranker with search_index outside the training group" in problem


def test_every_training_asset_is_in_the_training_group(settings):
    graph = build_definitions(settings.sources_file).get_repository_def().asset_graph
    grouped = {key.to_user_string() for key in graph.executable_asset_keys
               if graph.get(key).group_name == TRAINING_GROUP}
    assert grouped == set(TRAINING_ASSETS)
