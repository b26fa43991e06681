"""Assets over all sources: the chunk-size distribution and the pgvector index."""


import base64

import pandas as pd
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    Config,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    EventRecordsFilter,
    MetadataValue,
    Output,
    PartitionsDefinition,
    RunsFilter,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
)

from lectio.quality.distribution import OVER_LIMIT_NOTE, SUMMARY, detail_markdown, histogram_markdown, histogram_png, size_distribution
from lectio.index import locks, tables, versions
from lectio.index.build import BuildChecks, build_index
from lectio.rulesets import registry
from assets.gate_settings import refuse_loosening
from assets.names import AWAITS_GATE_TAG, FAILED_TAG, GATE_JOB, INDEX_POOL, INGEST_ASSETS, INGEST_JOB, MODEL_TAG
from assets.outcomes import root_cause
from assets.refusals import refusal
from assets.source_assets import INPUTS_KEY, OWNERS, entry_failure
from resources import CorpusResource, DatabaseResource, EmbedderResource

# A source whose partition never materialised (it failed) is left out instead of failing the
# whole index; the index carries its last good chunks instead (see lectio.index.build).
_ALL_AVAILABLE = AssetIn(metadata={"allow_missing_partitions": True})
# Every source indexed from this run's chunks: a failed one, carried or left out, fails this
# check (ERROR), which alert_on_failed_checks sends, and shows red on the run and the asset.
SOURCES_CHECK = "every_source_indexed"
CHUNK_COLUMN_NAMES = [name for name, _ in tables.CHUNK_COLUMNS]


class IndexConfig(Config):
    # Sources that failed in this run, as `lectio run` saw them; besides these, a source whose
    # chunks were never materialised counts as failed.
    failed_sources: list[str] = []
    # False builds a candidate version beside the live one (for comparison or a gated switch).
    switch_live: bool = True
    # Source → fingerprint of the chunks its ingest made in this run (`lectio run` passes them):
    # a source whose stored chunks differ was overwritten by another run and is not indexed.
    expected_chunks: dict[str, str] = {}
    # A failed source keeps its last good chunks (from the live version) and the others go live
    # without it, however the build was launched; False keeps the whole live version instead.
    carry_failed_sources: bool = True


def table_metadata(frame: pd.DataFrame, descriptions: dict[str, str] | None = None) -> MetadataValue:
    """A DataFrame as Dagster's table metadata: numbers stay numbers (sortable in the UI); a column
    named in `descriptions` carries its description in the table's schema."""
    def kind(dtype) -> str:
        return "int" if pd.api.types.is_integer_dtype(dtype) else "float" if pd.api.types.is_float_dtype(dtype) else "string"

    columns = [TableColumn(str(name), kind(dtype), description=(descriptions or {}).get(str(name)))
               for name, dtype in frame.dtypes.items()]
    records = [TableRecord({str(k): (v.item() if hasattr(v, "item") else v) for k, v in row.items()})
               for row in frame.to_dict(orient="records")]
    return MetadataValue.table(records=records, schema=TableSchema(columns=columns))


def _refuse_a_loosened_gate(context: AssetExecutionContext) -> None:
    """In a run that also gates (migrate_index, or a selection with the migration assets), a config
    that would loosen the gate fails the run here, before the candidate is built."""
    gating = {key.to_user_string() for key in context.job_def.asset_layer.selected_asset_keys}
    if gating & {"index_evaluation", "live_index"}:
        refuse_loosening(context, built=None, model_change=False)


def _by_source(loaded, partitions_def: PartitionsDefinition) -> dict[str, pd.DataFrame]:
    # With one partition the IO manager hands over the object itself, not a dict.
    if isinstance(loaded, dict):
        return {k: v for k, v in loaded.items() if v is not None}
    keys = partitions_def.get_partition_keys()
    return {keys[0]: loaded} if loaded is not None else {}


def build_index_assets(partitions_def: PartitionsDefinition) -> list:
    @asset(ins={"chunks": _ALL_AVAILABLE}, group_name="index", kinds={"pandas"}, owners=OWNERS)
    def chunk_size_distribution(context: AssetExecutionContext, chunks) -> pd.DataFrame:
        """Token counts per source, content type and ruleset, with a histogram and the longest chunks."""
        frames = _by_source(chunks, partitions_def)
        if not frames:
            raise RuntimeError("no source has chunks: every source failed")
        frame = pd.concat(frames.values(), ignore_index=True)
        table = size_distribution(frame)
        png = base64.b64encode(histogram_png(frame)).decode()
        context.add_output_metadata(
            {
                # A table value is drawn as a table on the asset page, its columns few enough to fit
                # there; Markdown over 1,000 characters (the detail, the image) hides behind
                # "[Show Markdown]", which opens it in a wide dialog.
                "distribution": table_metadata(table[SUMMARY], {"over_model_limit": OVER_LIMIT_NOTE}),
                "distribution_detail": MetadataValue.md(detail_markdown(table, frame)),
                "histogram": MetadataValue.md(histogram_markdown(frame)),
                "histogram_image": MetadataValue.md(f"![chunk sizes](data:image/png;base64,{png})"),
                "chunks": len(frame),
                "over_model_limit": int(table["over_model_limit"].sum()),
                "over_model_limit_note": MetadataValue.text(OVER_LIMIT_NOTE),
            }
        )
        return table

    @asset(ins={"chunks": _ALL_AVAILABLE, "embeddings": _ALL_AVAILABLE}, group_name="index", pool=INDEX_POOL,
           kinds={"postgres"}, owners=OWNERS,
           check_specs=[AssetCheckSpec(SOURCES_CHECK, asset="search_index", description=(
               "Every source of the sources file was indexed from its latest ingest; a failed source "
               "(its last good chunks carried over, or left out) fails it, naming why."))])
    def search_index(
        context: AssetExecutionContext, config: IndexConfig, corpus: CorpusResource, database: DatabaseResource,
        embedder: EmbedderResource, chunks, embeddings
    ):
        """A pgvector table per index version (HNSW + full text), and the pointer to the live one."""
        _refuse_a_loosened_gate(context)
        by_source = _by_source(chunks, partitions_def)
        embedded = _by_source(embeddings, partitions_def)
        ready = {sid: frame for sid, frame in by_source.items() if sid in embedded}
        missing = [sid for sid in partitions_def.get_partition_keys() if sid not in ready]
        # Judged by each source's own latest results, whenever they came: a source still broken
        # since an earlier batch stays failed (and named) until its current file is ingested.
        stale = not_from_current_inputs(context.instance, corpus, embedder, sorted(ready))
        failed = sorted(set(config.failed_sources) | set(missing) | set(stale))
        if not ready and not config.carry_failed_sources:
            raise RuntimeError(f"no source has chunks and embeddings to index; failed: {', '.join(failed)}")
        # With nothing ready, every source failed: the build may still carry their last good chunks.
        frame = pd.concat(ready.values(), ignore_index=True) if ready else pd.DataFrame(columns=CHUNK_COLUMN_NAMES)
        with database.connect() as conn, locks.writer_lock_unless_held(conn, "this index build"):
            live_before = versions.live_version(conn)
            checks = BuildChecks(corpus.sources(), config.expected_chunks, config.carry_failed_sources)
            # A version of a model a run's tag chose is a candidate: only the gate (live_index,
            # after it in migrate_index) switches it in.
            switch = config.switch_live and embedder.tagged_model is None
            outcome = build_index(conn, frame, embedder.model_id, failed, switch, checks)
            live_now = versions.live_version(conn)
        failed = sorted(set(failed) | set(outcome.rejected))
        indexed = sorted(set(ready) - set(outcome.rejected) - set(failed))
        why = {**_why_failed(context.instance, failed, stale), **outcome.rejected}
        problems = {sid: f"{why[sid]} → {outcome.carried[sid]}" if sid in outcome.carried else why[sid]
                    for sid in failed}
        _say_on_the_run(context, problems)
        _hand_to_the_gate(context, outcome)
        yield Output(
            # `chunks` lets the row-count check compare the version with what was handed to it.
            {"version": outcome.version, "live": outcome.live, "sources": indexed, "chunks": outcome.chunks,
             "awaits_gate": outcome.awaits_gate},
            metadata={
                "version": outcome.version,
                "rows": outcome.rows,
                "live": outcome.live,
                "live_index": live_change(live_before, live_now, outcome.version, outcome.reused_existing),
                "reused_existing_version": outcome.reused_existing,
                "decision": outcome.reason,
                "sources": ", ".join(indexed),
                "failed_sources": ", ".join(failed) or "none",
                "quality_failures": "; ".join(f"{s}: {d}" for s, d in sorted(outcome.rejected.items())) or "none",
                "rule_changes": "; ".join(f"{s}: {c}" for s, c in outcome.rule_changes.items()) or "none",
                "model_change": outcome.model_change or "none",
                "awaits_gate": outcome.awaits_gate,
                "held_back_because": held_back_because(outcome) if outcome.awaits_gate else "",
            },
        )
        yield _sources_check(problems, outcome.version, outcome.live)

    return [chunk_size_distribution, search_index]


def live_change(before: str | None, now: str | None, version: str, reused: bool = False) -> str:
    """What a build did to the live index, in words: a bare `live: False` read like a failure when
    the live version simply stayed (a candidate, or a version already live), and a number going
    down (v4 -> v3) read like a rollback when the build's chunks were exactly an older version's."""
    if before == now:
        if now is None:
            return f"nothing is live; {version} built"
        return f"kept {now} live" + (" (this build's version)" if now == version else f"; {version} not switched in")
    if reused and now == version:
        return (f"switched {before or 'nothing'} -> {now}: this build's chunks are exactly those of {now}, built "
                "earlier, so that version went live again rather than a copy of it")
    return f"switched {before or 'nothing'} -> {now}"


def _sources_check(problems: dict[str, str], version: str, live: bool) -> AssetCheckResult:
    where = f"{version} ({'live' if live else 'not live'})"
    if not problems:
        return AssetCheckResult(check_name=SOURCES_CHECK, passed=True, description=f"every source is in {where}")
    lines = "; ".join(f"{sid}: {what}" for sid, what in sorted(problems.items()))
    return AssetCheckResult(
        check_name=SOURCES_CHECK, passed=False, severity=AssetCheckSeverity.ERROR,
        description=f"{len(problems)} source(s) failed, {where}: {lines}",
        metadata={"failed_sources": ", ".join(sorted(problems)), "version": version, "live": live},
    )


def _say_on_the_run(context: AssetExecutionContext, problems: dict[str, str]) -> None:
    """The failed sources where a run's reader looks first: a tag at the top of the run's page
    and an error line in its log (a green run whose metadata alone said so went unnoticed)."""
    if not problems:
        return
    context.instance.add_run_tags(context.run.run_id, {FAILED_TAG: ", ".join(sorted(problems))[:250]})
    for sid, what in sorted(problems.items()):
        context.log.error(f"source {sid} failed: {what}")


def _hand_to_the_gate(context: AssetExecutionContext, outcome) -> None:
    """A version held back by a rule or model change, tagged on the run (index_after_batch asks the
    gate for it; `lectio run` gates it itself) and named in its log with what gates it."""
    if not outcome.awaits_gate:
        return
    context.instance.add_run_tags(context.run.run_id, {AWAITS_GATE_TAG: outcome.version})
    context.log.warning(f"{outcome.version} awaits the migration gate ({held_back_because(outcome)}): the job "
                        f"{GATE_JOB} scores it against the live version and switches it in only if it is no worse")


def held_back_because(outcome) -> str:
    """Why a build held its version back for the gate: a rule change, a model change, or both;
    "" for a version not held back."""
    why = ["the chunking rules changed"] if outcome.rule_changes else []
    if outcome.model_change:
        why.append(f"the embedding model changed: {outcome.model_change}")
    return " and ".join(why)


def not_from_current_inputs(instance: DagsterInstance, corpus: CorpusResource, embedder: EmbedderResource,
                            sources: list[str]) -> dict[str, str]:
    """The sources whose stored chunks were not made from their current entry and file, each with
    what happened: the latest read of the source (raw_texts) recorded other inputs than the sources
    file, the file, the ruleset and the model give now (one of them changed, and its ingest failed at
    the entry or has not run since), or a later stage's latest output is older than that read (the new file did not
    parse or chunk, or a run made only part of the ingest). A source read before reads recorded
    their inputs is taken as current."""
    storage = instance.event_log_storage
    latest = {name: storage.get_latest_storage_id_by_partition(
        AssetKey(name), DagsterEventType.ASSET_MATERIALIZATION, set(sources)) for name in INGEST_ASSETS}
    read_ids = list(latest[INGEST_ASSETS[0]].values())
    if not read_ids:
        return {}  # no filter by storage ids at all would read every materialization there is
    reads = {record.storage_id: record for record in storage.get_event_records(EventRecordsFilter(
        DagsterEventType.ASSET_MATERIALIZATION, storage_ids=read_ids))}
    current = registry.input_fingerprints(corpus.sources_path, corpus.corpus_path, embedder.model_id)
    stale = {}
    for sid in sources:
        read = reads.get(latest[INGEST_ASSETS[0]].get(sid))
        if read is None or not current.get(sid):
            continue  # never read (missing), or its data is not here to compare
        stages = [latest[name].get(sid, -1) for name in INGEST_ASSETS]
        recorded = read.asset_materialization.metadata.get(INPUTS_KEY)
        if recorded is not None and recorded.value != current[sid]:
            made_with = _embedded_with(storage, read.run_id, stages[-1])
            stale[sid] = _changed_since_read(corpus, embedder, sid, read, made_with)
        elif why := _stale_read(stages):
            stale[sid] = why
    return stale


def _embedded_with(storage, run_id: str, embedded: int) -> str | None:
    """The model the run `run_id` embedded a source with, from the source's latest embeddings
    (storage id `embedded`); None where those are another run's, which says nothing of this one."""
    records = storage.get_event_records(EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION,
                                                           storage_ids=[embedded])) if embedded >= 0 else []
    if not records or records[0].run_id != run_id:
        return None
    model = records[0].asset_materialization.metadata.get("model")
    return str(model.value) if model is not None else None


def _changed_since_read(corpus: CorpusResource, embedder: EmbedderResource, sid: str, read, then: str | None) -> str:
    """Why a source whose latest read (`read`) recorded other inputs than it has now is stale, naming
    what changed. The fingerprint folds the entry, the files, the ruleset and the model into one
    hash, so the model is told apart by taking it again with the model the read's run embedded with
    (`then`): equal to the recorded one, only the model changed (a batch ingested under a run's
    lectio/embed_model tag, built under another model); a changed file was blamed for that."""
    now, run = embedder.model_id, f"run {read.run_id[:8]}"
    recorded = read.asset_materialization.metadata[INPUTS_KEY].value
    model_changed = then is not None and then != now
    if model_changed and registry.input_fingerprints_of(corpus.sources_path, corpus.corpus_path, [sid],
                                                        then).get(sid) == recorded:
        what = f"the embedding model changed after its latest read ({run} embedded it with {then}; this build embeds with {now})"
    else:
        what = (f"its entry, file or ruleset{' and the embedding model' if model_changed else ''} changed after its "
                f"latest read ({run})")
    tag = f" tagged {MODEL_TAG}={embedder.tagged_model}" if embedder.tagged_model else ""
    return (f"{what}, and it has not been ingested since: its chunks are not from its current inputs; materialize it "
            f"with the job {INGEST_JOB}{tag}")


def _stale_read(stages: list[int]) -> str | None:
    """Why a source's stored chunks are not from its latest read, given each ingest stage's latest
    storage id (`stages`), or None."""
    if stages == sorted(stages):
        return None
    # Some stage was materialized after a later one, by a run that stopped there (a partial
    # selection made before such runs were refused, or a step that failed).
    behind = next(i for i in range(1, len(stages)) if stages[i] < max(stages[:i]))
    newest = max(range(behind), key=stages.__getitem__)
    return (f"{INGEST_ASSETS[newest]} was materialized again without {', '.join(INGEST_ASSETS[newest + 1:])}, so "
            f"its stored chunks and embeddings are older than its {INGEST_ASSETS[newest]}; materialize it with the "
            f"job {INGEST_JOB}")


def _why_failed(instance: DagsterInstance, source_ids: list[str], stale: dict[str, str]) -> dict[str, str]:
    """Per failed source, what its latest ingest run said: the failed step's root cause, or the
    entry or parse check that stopped it; or that no ingest of it has run, or why its chunks are
    not from its latest read (`stale`)."""
    return {sid: _latest_ingest_problem(instance, sid, stale.get(sid)) for sid in source_ids}


def _latest_ingest_problem(instance: DagsterInstance, source_id: str, stale: str | None) -> str:
    ingest_keys = {AssetKey(name) for name in INGEST_ASSETS}
    for record in instance.get_run_records(RunsFilter(tags={"dagster/partition": source_id}), limit=20):
        run = record.dagster_run
        if run.job_name != INGEST_JOB and not set(run.asset_selection or ()) & ingest_keys:
            continue
        if refusal(instance, run):
            continue  # a refused run made nothing (its events prove it, not its tag: assets.refusals)
        if not run.is_finished:
            return f"its ingest run {run.run_id[:8]} has not finished ({run.status.value})"
        events = [e.dagster_event for e in instance.all_logs(run.run_id) if e.is_dagster_event]
        if problem := entry_failure(events):
            return problem
        if cause := root_cause(events):
            step, message = cause
            return f"{message} (run {run.run_id[:8]}{f', step {step}' if step else ''})"
        if run.status != DagsterRunStatus.SUCCESS:
            return f"its ingest run {run.run_id[:8]} ended {run.status.value}"
        if stale:
            return stale
        return f"its ingest run {run.run_id[:8]} made no chunks and embeddings for it"
    return stale or "no ingest run has made its chunks and embeddings"
