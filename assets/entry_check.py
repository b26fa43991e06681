"""The `source_entry` check of raw_texts keeps naming a source whose entry or file is still broken.

Dagster's check page shows a partitioned check by its newest evaluation of any partition: once
another source's run passed its entry, the check read "Passed (kjv)" and the broken source was
gone from it (only its partition's status, the asset node and every_source_indexed still told).
Each run that passes its own entry therefore judges again the entries of the other sources whose
latest evaluation failed, and restates each one still broken as a fresh failed evaluation of that
source's partition, recorded in this run (Dagster keeps one evaluation of a check per run and
partition, so a runless one could be reported once only) and marked RESTATED_KEY: what reads a
run's own outcome skips it (assets.source_assets.entry_failure), and so do alerts, since the failure
was alerted when it was first evaluated. It is aimed at the materialization the failure it restates
was, so the partition's status stays what it was."""

from __future__ import annotations

from typing import Callable

from dagster import (AssetCheckEvaluation, AssetCheckKey, AssetCheckSeverity, AssetExecutionContext, DagsterEvent,
                     DagsterEventType, EventRecordsFilter)

ENTRY_CHECK = "source_entry"
# On a restated evaluation: the run that judged the entry again.
RESTATED_KEY = "restated_by_run"


def restate_broken_entries(context: AssetExecutionContext, judge: Callable[[str], tuple[str | None, str]]) -> None:
    """Restate, after this run's own evaluation, every other source whose latest entry evaluation
    failed and whose entry `judge` (source id -> (problem or None, field)) still finds broken. A
    failure here fails nothing: the check only reads as it did before."""
    try:
        restated = [_restate(context, key, failed, judge) for key, failed in _latest_failures(context).items()]
    except Exception as exc:  # noqa: BLE001 - this run's own source is done; only the page's top line is at stake
        context.log.warning(f"source_entry: the other sources' failures were not restated: {exc}")
        return
    if names := [key for key in restated if key]:
        context.log.info(f"source_entry: still broken, restated: {', '.join(names)}")


def _restate(context: AssetExecutionContext, key: str, failed: AssetCheckEvaluation,
             judge: Callable[[str], tuple[str | None, str]]) -> str | None:
    """Source `key` restated in this run where its entry is still broken, else None (fixed since:
    its own run passes it)."""
    problem, field = judge(key)
    if problem is None:
        return None
    evaluation = AssetCheckEvaluation(
        asset_key=context.asset_key, check_name=ENTRY_CHECK, passed=False, severity=AssetCheckSeverity.ERROR,
        description=problem, partition=key, target_materialization_data=failed.target_materialization_data,
        metadata={"field": field, "source": key, RESTATED_KEY: context.run.run_id})
    context.instance.report_dagster_event(DagsterEvent(
        event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION.value, job_name=context.run.job_name,
        event_specific_data=evaluation), run_id=context.run.run_id)
    return key


def _latest_failures(context: AssetExecutionContext) -> dict[str, AssetCheckEvaluation]:
    """The latest entry evaluation of each other source of the sources file, where it failed."""
    others = set(context.assets_def.partitions_def.get_partition_keys()) - {context.partition_key}
    check = AssetCheckKey(context.asset_key, ENTRY_CHECK)
    infos = context.instance.event_log_storage.get_asset_check_partition_info([check])
    latest = [info.latest_check_event_storage_id for info in infos if info.partition_key in others]
    if not latest:
        return {}
    # A latest event that is a planned evaluation (its run has not got there yet) is not fetched.
    records = context.instance.get_event_records(
        EventRecordsFilter(DagsterEventType.ASSET_CHECK_EVALUATION, storage_ids=latest), limit=len(latest))
    evaluations = [record.event_log_entry.dagster_event.event_specific_data for record in records]
    return {evaluation.partition: evaluation for evaluation in evaluations if not evaluation.passed}
