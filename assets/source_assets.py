"""Per-source assets, one partition per source of the sources file.

Staleness is per source: `source_inputs` observes each source's input fingerprint (entry, input
files, the version of the ruleset that chunks it, the embedding model) as its data version, and
`raw_texts` depends on it, so a new fingerprint marks that source's `raw_texts` stale (and each
later stage once the stage before it is materialized again). An asset's code version would be one
for all partitions, so a rule change would mark every source stale; through the data version it
marks only the sources that ruleset chunks.
"""


import os
import re
from collections.abc import Callable

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    DagsterEventType,
    Output,
    DataVersion,
    DataVersionsByPartition,
    PartitionsDefinition,
    ResourceParam,
    asset,
    observable_source_asset,
)

from assets.checks import known_notices, vectors_check, vectors_spec
from assets.entry_check import ENTRY_CHECK, RESTATED_KEY, restate_broken_entries
from assets.names import EMBED_POOL, FAILED_TAG, INGEST_ASSETS, INGEST_JOB
from assets.outcomes import refuse
from lectio.rulesets import registry
from lectio.rulesets.chunk import chunks_frame
from lectio.embedding.cache import embed_chunks
from lectio.readers.changes import fetch_missing_modules
from lectio.index import versions
from lectio.sources import Source, SourceError
from resources import CorpusResource, DatabaseResource, EmbedderResource

# Who answers for these assets in the UI's catalog (Dagster's owner form: an email or team:NAME).
OWNERS = ["team:platform"]

SOURCE_INPUTS = "source_inputs"
# An observable source asset takes no `kinds`; Dagster reads an asset's kinds from these tags.
KIND_TAGS = {"dagster/kind/python": ""}
# raw_texts' metadata: the input fingerprint it was read from, recorded by every run (the UI's,
# a sensor's, `lectio run`'s), so `lectio run` can tell an unchanged source from the data alone.
INPUTS_KEY = "inputs"
PARSE_CHECK = "source_parses"
# The checks a source's run evaluates before the stage they guard: one that fails ends the run
# successfully having made nothing more (see build_source_assets), and the source counts as failed.
GATE_CHECKS = (ENTRY_CHECK, PARSE_CHECK)


def file_problem(source: Source) -> str | None:
    """What is wrong with a valid entry's file (gone, unreadable), or None."""
    if source.path is not None and not source.path.exists():
        return f"source {source.id!r}: file {source.path} does not exist"
    if source.path is not None and not os.access(source.path, os.R_OK):
        return f"source {source.id!r}: {source.path} is not readable"
    return None


def entry_failure(events) -> str | None:
    """What was wrong with the source's entry or its file, from a run's events (DagsterEvent), or
    None. A run whose entry or parse check failed made nothing more and still ended successfully
    (see build_source_assets)."""
    for event in events:
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            if evaluation.check_name in GATE_CHECKS and not evaluation.passed \
                    and RESTATED_KEY not in (evaluation.metadata or {}):  # another source's (assets.entry_check)
                return evaluation.description or "the source's entry or file is not valid"
    return None


def _flag_run(context: AssetExecutionContext, problem: str) -> None:
    """A source's run stopped by its entry or file ends successfully (see build_source_assets);
    it is flagged where a team looks first instead: the failed-sources tag, in the Runs list and at
    the top of the run's page, and an error line in its log."""
    context.instance.add_run_tags(context.run.run_id, {FAILED_TAG: context.partition_key})
    context.log.error(problem)


def partial_ingest(selected: set[str], stage: str, source_id: str) -> str | None:
    """Why a run that materialises `stage` but not every later ingest stage (`selected`: the run's
    assets) is refused, in one line naming the job to run, or None. Such a run left the source's
    text newer than its embeddings: the index could not take it, and called the source failed."""
    missing = [name for name in INGEST_ASSETS[INGEST_ASSETS.index(stage) + 1:] if name not in selected]
    if not missing:
        return None
    return (f"refused: this run materializes {stage} of source {source_id!r} without {', '.join(missing)}, so its "
            f"new text would never be searchable; materialize the source with the job {INGEST_JOB} (or select "
            f"{stage} through embeddings)")


def _refuse_partial_ingest(context: AssetExecutionContext, stage: str) -> None:
    """Refuses the run at its first step, before anything is read, when it is a partial ingest (the
    UI's Materialize on raw_texts alone, or on the `ingest` group, which lacks `embeddings`): the
    run ends Canceled, and the checks it planned read skipped (assets.refusals)."""
    selected = {key.to_user_string() for key in context.job_def.asset_layer.selected_asset_keys}
    if problem := partial_ingest(selected, stage, context.partition_key):
        refuse(context, problem, f"run the job {INGEST_JOB} instead")


def parse_problem(source: Source, exc: SourceError) -> tuple[str, dict]:
    """A file that cannot be parsed, as one line naming the source, its file and the line, with the
    file and line as metadata (a problem that names no line has none)."""
    where = str(source.path or source.module or "")
    metadata = {"source": source.id}
    problem = exc.problem
    if where:
        metadata["file"] = where
        problem = problem if where in problem else f"{where}: {problem}"
    if line := re.search(r"\bline (\d+)\b", exc.problem):
        metadata["line"] = int(line.group(1))
    return f"source {source.id!r}: {problem}", metadata


def _judge_entry(corpus: CorpusResource, key: str, embedder: EmbedderResource,
                 settle: bool = False) -> tuple[Source | None, str | None, str | None, str]:
    """Source `key`'s entry and input fingerprint, with what is wrong with the entry or its file
    and the field at fault: (source, inputs, None, "path") when nothing is. `settle`: taken as
    the source's own run takes them, after _ready_to_fingerprint."""
    try:
        if settle:
            _ready_to_fingerprint(corpus, key)
        source, inputs = registry.source_and_inputs(corpus.sources_path, corpus.corpus_path, key, embedder.model_id)
    except SourceError as exc:
        return None, None, str(exc), exc.field or "entry"
    return source, inputs, file_problem(source), "path"


def _ready_to_fingerprint(corpus: CorpusResource, key: str) -> None:
    """What a source's own run does before it takes the source's fingerprint, whoever launched it
    (the UI, a backfill, a sensor, `lectio run`): the home's embedding runtime settled, as a run
    must before it takes its model id, and the source's SWORD module fetched. Without its module a
    source has no fingerprint: raw_texts would record no inputs, and the next `lectio run` would
    read the source again though nothing changed."""
    registry.settle_runtime(corpus.sources_path, corpus.corpus_path)
    fetch_missing_modules(corpus.sources_path, corpus.corpus_path, [key])


def _observed_prints(context, corpus: CorpusResource, model: str) -> dict[str, str | None]:
    """What one observation of source_inputs records. In a source's run, that source's fingerprint
    alone: raw_texts needs only its own, and every source's, in each of N runs, cost O(N) per run
    and wrote N events each time (O(N²) over a `lectio run`). Every source's in the UI's Observe."""
    if context.has_partition_key:
        return registry.input_fingerprints_of(corpus.sources_path, corpus.corpus_path, [context.partition_key], model)
    return registry.input_fingerprints(corpus.sources_path, corpus.corpus_path, model)


def build_source_assets(partitions_def: PartitionsDefinition) -> list:
    with known_notices():
        observable = observable_source_asset(
            name=SOURCE_INPUTS, partitions_def=partitions_def, group_name="ingest", tags=KIND_TAGS,
            description="What each source is ingested from (its entry, files, ruleset version and the model), one "
            "data version per source; a new one marks that source's raw_texts stale. Observed by `lectio run`, the "
            "source_changes sensor, or Observe here. Its partitions read \"0% filled\" whatever their state: Dagster counts "
            "materializations there, and this asset is only ever observed; its data versions are on this page.")

    @observable
    def source_inputs(context, corpus: CorpusResource, embedder: EmbedderResource):
        prints = _observed_prints(context, corpus, embedder.model_id)
        with known_notices():
            return DataVersionsByPartition({k: DataVersion(v) for k, v in prints.items() if v})

    # The entry is checked in raw_texts' own step, before anything is read, and the file is parsed
    # under a check of parsed_structure's own: a bad entry is then one failed check naming the
    # field, a malformed file one naming the file and line; the stage yields no output, and no
    # later stage or check runs. Not blocking, so the run ends without a failure: Dagster shows
    # every check planned in a failed run as failed, which painted the chunk checks and
    # embedding_vectors red though none ran; in a run that succeeds they show as skipped. What
    # reads runs counts the source as failed all the same (entry_failure: `lectio run`,
    # index_after_batch), and the failed check alerts.
    with known_notices():
        entry_spec = AssetCheckSpec(ENTRY_CHECK, asset="raw_texts", blocking=False, partitions_def=partitions_def,
                                    description="The source's entry is valid (ACL present and valid, kind, format, "
                                    "path) and its file exists and is readable.")
        parse_spec = AssetCheckSpec(PARSE_CHECK, asset="parsed_structure", blocking=False,
                                    partitions_def=partitions_def,
                                    description="The source's file parses; when it does not, this check names the "
                                    "file and line, and no later stage or check runs.")

    @asset(partitions_def=partitions_def, group_name="ingest", deps=[source_inputs], check_specs=[entry_spec],
           output_required=False, kinds={"python"}, owners=OWNERS)
    def raw_texts(context: AssetExecutionContext, corpus: CorpusResource, embedder: EmbedderResource):
        """The source as read, with a content hash so unchanged input is recognised."""
        key = context.partition_key
        _refuse_partial_ingest(context, "raw_texts")
        # The one place a source's entry is read from the sources file (once); later stages get it
        # from here. Its fingerprint is taken before the file is read: a file changed while it is
        # read then shows as changed next time.
        source, inputs, problem, field = _judge_entry(corpus, key, embedder, settle=True)
        if problem:
            _flag_run(context, problem)
            yield AssetCheckResult(check_name=ENTRY_CHECK, passed=False, severity=AssetCheckSeverity.ERROR,
                                   description=problem, metadata={"field": field, "source": key})
            return
        raw = registry.read_source(source, corpus.corpus_path)
        yield Output(raw, metadata={"content_hash": raw.content_hash, "units_read": raw.units,
                                    **({INPUTS_KEY: inputs} if inputs else {})})
        yield AssetCheckResult(check_name=ENTRY_CHECK, passed=True, metadata={"source": key})
        # After this run's own evaluation, which would otherwise be the newest the check page shows.
        restate_broken_entries(context, lambda other: _judge_entry(corpus, other, embedder)[2:])

    @asset(partitions_def=partitions_def, group_name="ingest", check_specs=[parse_spec], output_required=False,
           kinds={"pandas"}, owners=OWNERS)
    def parsed_structure(context: AssetExecutionContext, raw_texts):
        """Books, chapters, verses and paragraph starts (scripture); sections and paragraphs (documents)."""
        _refuse_partial_ingest(context, "parsed_structure")
        try:
            parsed = registry.parse_source(raw_texts)
        except SourceError as exc:  # the file's fault; anything else is lectio's and fails the step
            description, metadata = parse_problem(raw_texts.source, exc)
            _flag_run(context, description)
            yield AssetCheckResult(check_name=PARSE_CHECK, passed=False, severity=AssetCheckSeverity.ERROR,
                                   description=description, metadata=metadata)
            return
        yield Output(parsed, metadata=registry.structure_facts(parsed))
        yield AssetCheckResult(check_name=PARSE_CHECK, passed=True, metadata={"source": context.partition_key})

    @asset(partitions_def=partitions_def, group_name="ingest", kinds={"pandas"}, owners=OWNERS)
    def chunks(context: AssetExecutionContext, parsed_structure):
        """Typed chunks, each with the source's ACL, its ruleset version and a content hash."""
        _refuse_partial_ingest(context, "chunks")
        frame = chunks_frame(registry.chunk_source(parsed_structure))
        counts = frame.groupby("granularity").size().to_dict()
        context.add_output_metadata(
            {
                "chunks": len(frame),
                **{f"chunks_{name}": int(n) for name, n in counts.items()},
                "rulesets": ", ".join(sorted(frame["ruleset"].unique())),
                # What this run made: the index built in the same run checks it still finds this.
                "fingerprint": versions.source_fingerprints(frame).get(context.partition_key, ""),
            }
        )
        return frame

    # embedding_vectors is evaluated in this step, not as a check of its own: see assets.checks
    # on why no per-source check may be offered alone.
    @asset(partitions_def=partitions_def, group_name="embed", check_specs=[vectors_spec(partitions_def)],
           pool=EMBED_POOL, kinds={"postgres"}, owners=OWNERS)
    def embeddings(context: AssetExecutionContext, database: DatabaseResource, embedder: EmbedderResource,
                   index_requests: ResourceParam[Callable], chunks):
        """Vectors for every chunk, through the cache keyed by (content hash, model id)."""
        with database.connect() as conn:
            stats = embed_chunks(conn, chunks, embedder.embedder())
        metadata = {
            "model": embedder.model_id,
            "chunks": stats.chunks,
            "embedded": stats.embedded,
            "reused_from_cache": stats.reused,
            "embed_seconds": round(stats.seconds, 2),
            "texts_per_second": round(stats.texts_per_second, 1),
        }
        yield Output(chunks[["chunk_id", "content_hash"]].assign(model_id=embedder.model_id), metadata=metadata)
        yield vectors_check(database, chunks["content_hash"], embedder.model_id, context.partition_key)
        # Stored: the batch's index may be asked for now, where this run ends its batch.
        index_requests(context, database)

    return [source_inputs, raw_texts, parsed_structure, chunks, embeddings]
