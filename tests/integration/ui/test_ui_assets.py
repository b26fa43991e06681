"""What the Dagster UI shows of lectio's definitions: a description on every asset and check, the
size distribution as a table with an inline histogram, the nightly schedule's partitions, and no
"Execute" on chunk checks that would launch a run bound to fail."""

from __future__ import annotations

import io
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    TableMetadataValue,
    build_schedule_context,
)

from pipelines.definitions import build_definitions
from pipelines.home import prepare_dagster_env
from assets.names import INGEST_JOB, MODEL_TAG

pytestmark = [pytest.mark.slow, pytest.mark.network]

PROJECT = Path(__file__).resolve().parents[3]
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# The Dagster UI shows Markdown metadata inline below this many characters, behind a link above.
UI_INLINE_MARKDOWN = 1000
BAR_COLOUR = np.array([0x4A, 0x6F, 0xA5]) / 255  # lectio.quality.distribution.histogram_png's bars


@pytest.fixture()
def instance(settings, database):
    prepare_dagster_env(settings, database)
    return DagsterInstance.get()


def test_every_asset_and_check_says_what_it_is(settings):
    graph = build_definitions(settings.sources_file).resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert (graph.get(key).description or "").strip(), f"{key.to_user_string()} has no description"
    for key in graph.asset_check_keys:
        assert (graph.get_check_spec(key).description or "").strip(), f"{key} has no description"
    # A fresh home shows the migration assets as never materialized: their descriptions say why.
    for name in ("index_evaluation", "live_index"):
        assert "`lectio migrate`" in graph.get(AssetKey(name)).description


def test_the_nightly_schedule_names_each_runs_partition(settings, instance):
    """The schedule's preview lists one request per source by its job alone; each request's tags
    (its preview button) hold its partition, its run key names it, and the schedule's
    description names every source."""
    defs = build_definitions(settings.sources_file)
    night = datetime(2026, 12, 1, 2, 0, tzinfo=timezone.utc)
    context = build_schedule_context(instance=instance, scheduled_execution_time=night,
                                     repository_def=defs.get_repository_def())
    requests = defs.resolve_schedule_def("nightly_reembed").evaluate_tick(context).run_requests
    partitions = defs.resolve_job_def(INGEST_JOB).partitions_def.get_partition_keys()
    assert sorted(r.partition_key for r in requests) == sorted(partitions)
    for request in requests:
        assert request.tags["dagster/partition"] == request.partition_key
        assert request.run_key.endswith(f":{request.partition_key}")
    description = defs.resolve_schedule_def("nightly_reembed").description
    assert all(key in description for key in partitions)


def _one_chunk_source(tmp_path):
    (tmp_path / "rota.txt").write_text("Rota\n\nTuesday: the hall is swept after choir.\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text("sources:\n  - {id: ui-rota, kind: document, format: text, path: rota.txt, acl: [public]}\n")
    return sources


def test_the_size_distribution_is_a_table_with_an_inline_histogram(instance, tmp_path):
    """One source of one chunk, ingested and then its distribution materialized alone, as the UI's
    Materialize on chunk_size_distribution does."""
    defs = build_definitions(_one_chunk_source(tmp_path))
    assert defs.resolve_job_def(INGEST_JOB).execute_in_process(
        run_config=QUIET, instance=instance, partition_key="ui-rota").success
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={AssetKey("chunk_size_distribution")})
    result = job.execute_in_process(run_config=QUIET, instance=instance)
    metadata = result.asset_materializations_for_node("chunk_size_distribution")[0].metadata

    table = metadata["distribution"]
    assert isinstance(table, TableMetadataValue)
    # Few enough columns to fit beside the UI's panels; the rest, and the longest chunks, in the detail.
    assert [c.name for c in table.schema.columns] == ["source_id", "granularity", "count", "p50", "p90", "max",
                                                      "over_model_limit"]
    # Issue 62, item 10: a count over the model's limit says why it is there (windowed by design), beside it.
    (limit,) = [c for c in table.schema.columns if c.name == "over_model_limit"]
    assert "by design" in limit.description and "windows" in limit.description
    assert metadata["over_model_limit_note"].value == limit.description
    (row,) = table.records
    assert row.data["source_id"] == "ui-rota" and row.data["count"] == 1
    assert isinstance(row.data["p50"], int)
    detail = metadata["distribution_detail"].value.splitlines()
    assert detail[0].startswith("|source_id|kind|granularity|ruleset|min|p10|p99|5 longest")
    assert detail[2].startswith("|ui-rota|document|") and "ui-rota" in detail[2].split("|")[-2]

    histogram = metadata["histogram"].value
    assert len(histogram) < UI_INLINE_MARKDOWN
    assert histogram.splitlines()[0].startswith("|kind / granularity|≤16 tokens|")
    assert sum(int(cell) for cell in histogram.splitlines()[2].strip("|").split("|")[1:]) == 1

    # The image of a single chunk has its bar (it came out blank before).
    import base64

    import matplotlib.image

    png = base64.b64decode(metadata["histogram_image"].value.split("base64,", 1)[1].rstrip(")"))
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")[..., :3]
    bar = np.all(np.abs(pixels - BAR_COLOUR) < 0.02, axis=-1)
    assert bar.sum() > 50


def test_the_chunk_checks_are_not_offered_alone(settings):
    """Dagster 1.13 cannot execute a partitioned asset's checks on their own (a check page's
    Execute is off: "not yet supported"); the checks tab's "Execute all" is offered for checks that
    are their own execution set, and launched a run without a partition, which failed. Kept as one
    execution set, the chunk checks say "cannot execute without materializing the asset" instead."""
    graph = build_definitions(settings.sources_file).resolve_asset_graph()
    chunk_checks = {key for key in graph.asset_check_keys if key.asset_key == AssetKey("chunks")}
    assert len(chunk_checks) == 6
    for key in chunk_checks:
        assert graph.get_execution_set_asset_and_check_keys(key) == chunk_checks


def test_the_adapted_embedder_says_how_to_migrate_as_the_code_does(settings):
    """Its description said to run migrate_index with LECTIO_EMBED_MODEL naming it, docs/ui.md to
    tag a backfill: migrate_index alone embeds nothing, so only a re-embedded batch can move the
    index to a new model. Both now say the run tag on a backfill of the ingest job (issue 62, item 7)."""
    graph = build_definitions(settings.sources_file).resolve_asset_graph()
    description = " ".join(graph.get(AssetKey("adapted_embedder")).description.split())
    ui_doc = " ".join((PROJECT / "docs" / "ui.md").read_text().split())
    assert "LECTIO_EMBED_MODEL" not in description
    for words in (f"backfill of the {INGEST_JOB} job", f"the run tag {MODEL_TAG}", "lectio migrate --embedder"):
        assert words in description, words
    assert f"backfill of the job `{INGEST_JOB}`" in ui_doc and f"`{MODEL_TAG}` set to the id" in ui_doc
