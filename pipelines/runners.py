"""`lectio run`: every source through ingest (one Dagster run per source), then the index.

Each source is its own run, so one bad source fails only itself; the index run comes last and
is told which sources failed, so each keeps its last good chunks (the live version's) in the
new version while the others' new chunks go live.
"""

from __future__ import annotations

import logging
import re
import signal
import socket
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    RunConfig,
)
from pipelines.dagster_internals import ACTIVE_PLAN_LOGGER, REPOSITORY_LABEL_TAG

from lectio.evaluation import migration_gate
from lectio.index import locks, retention, schema, versions
from lectio.index.database import NO_SPACE, ensure_database, full_disk_line, server_log_size, server_stopped
from lectio.settings import Settings
from lectio.readers.changes import fetch_missing_modules
from lectio.rulesets.registry import input_bytes, input_fingerprints, settle_runtime
from lectio.sources import source_ids
from assets.index import IndexConfig
from assets.source_assets import INPUTS_KEY, entry_failure
from pipelines.observations import source_observations
from pipelines.definitions import build_definitions
from assets.names import GATE_JOB, INDEX_JOB, INGEST_ASSETS, INGEST_JOB, LAUNCHED_BY_TAG
from assets.gate_settings import EvaluationConfig, GateConfig, operators_settings
from pipelines.home import executing_instance, prepare_dagster_env
from assets.outcomes import root_cause
from pipelines.run_owners import owner_tags, ui_origin

# After a bad source entry every later step is skipped, and Dagster's plan then warns on its Python
# logger that each blocking chunk check "emitted no result" (its step was skipped too) and that
# `embeddings` "will proceed" (it does not: it is skipped). The run's report names the entry's
# problem; these lines would only contradict it on the console.
logging.getLogger(ACTIVE_PLAN_LOGGER).addFilter(
    lambda record: "emitted no result" not in record.getMessage())

# Dagster's console logger prints every event and each failure's stack trace; lectio prints its
# own summary instead, and the full story stays in the run's logs in the Dagster UI.
_QUIET_LOGGERS = {"console": {"config": {"log_level": "CRITICAL"}}}


def _execute(defs, job_name: str, instance: DagsterInstance, tags: dict[str, str] | None = None, **kwargs):
    """Execute one of the code location's jobs in this process, as a run the UI files under
    its job. The job page lists a job's runs by the hidden repository label tag, and the Overview
    timeline places a run by its code-location origin; an in-process run has neither. The tag
    goes on at creation (the page lists the run while it runs); execute_in_process takes no
    origin, so it is recorded once the run has ended, as `dagster run migrate-repository` does.
    The run also names this process (pipelines.run_owners): no launcher watches it, and killed,
    it would otherwise stay STARTED, holding a slot of the run queue."""
    origin = ui_origin(defs.get_repository_def().name, job_name)
    run_id = str(uuid.uuid4())  # Dagster's run ids are uuid4s; known first, so the owner tags can name it
    result = defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, raise_on_error=False, run_id=run_id,
        tags={**(tags or {}), **owner_tags(run_id), REPOSITORY_LABEL_TAG: origin.repository_origin.get_label()},
        **kwargs)
    instance.run_storage.replace_job_origin(instance.get_run_by_id(result.run_id), origin)
    return result


def _run_config(**ops) -> RunConfig:
    """A run's config: each op's typed Config (assets.index, assets.gate_settings), quiet console."""
    return RunConfig(ops=ops, loggers=_QUIET_LOGGERS)


class Interrupted(Exception):
    """SIGINT or SIGTERM stopped the main job: no later source is read and no index is built, so
    the live index stays as it was."""


@dataclass
class SourceOutcome:
    source_id: str
    ok: bool
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)  # asset → seconds
    facts: dict[str, object] = field(default_factory=dict)  # metadata worth printing
    error: str | None = None
    run_id: str | None = None  # the run that made its outputs (an earlier one when reused)
    reused: bool = False  # unchanged since run_id (which may be a UI run): not read again


@dataclass
class MainRunReport:
    sources: list[SourceOutcome]
    index: dict[str, object]
    index_stages: dict[str, float]
    seconds: float

    @property
    def failed(self) -> list[SourceOutcome]:
        return [s for s in self.sources if not s.ok]

    @property
    def ok(self) -> bool:
        """Every source ingested, the index built, and a rule change, where there was one, let in by the gate."""
        return not self.failed and bool(self.index.get("ok")) and (self.index.get("gate") or {}).get("passed", True)

    @property
    def model_seconds(self) -> float:
        """Time the embedding stage spent embedding (model and cache writes), summed over sources:
        what a cold run cannot avoid, set against the rest of the run."""
        return sum(float(s.facts.get("embeddings", {}).get("embed_seconds", 0) or 0) for s in self.sources)

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 1),
            "model_seconds": round(self.model_seconds, 1),
            "sources": [s.__dict__ for s in self.sources],
            "index": self.index,
            "index_stages": self.index_stages,
        }


def run_main(settings: Settings, echo: Callable[[str], None] = print, switch_live: bool = True,
             locked: bool = False, command: str = "lectio run") -> MainRunReport:
    """Every source through ingest, then the index, as the one writer of the database (`locked`:
    the caller already holds the writer lock; `command` is tagged on its runs). Raises Interrupted
    on SIGINT or SIGTERM, and locks.WriterBusy when another writer holds the database."""
    with _stop_on_signals() as stopped, _server_death_in_one_line(settings):
        if locked:
            return _run_main(settings, echo, switch_live, {LAUNCHED_BY_TAG: command}, stopped)
        with ensure_database(settings).connect() as conn, locks.writer_lock(conn, "this run"):
            return _run_main(settings, echo, switch_live, {LAUNCHED_BY_TAG: command}, stopped)


@contextmanager
def _server_death_in_one_line(settings: Settings) -> Iterator[None]:
    """A run whose embedded server died under it (PostgreSQL stops when it cannot write its WAL
    to a full disk) raises ServerStopped, the server's own reason in one line: Dagster's storage
    raised its lost connection with the SQL it was running, after printing it once already."""
    offset = server_log_size(settings)
    stderr = sys.stderr
    sys.stderr = _Unprinted(stderr, EVENT_LOG_FAILURE)
    try:
        yield
    except Exception as exc:
        if (stopped := server_stopped(exc, settings, offset)) is None:
            raise
        raise stopped from None
    finally:
        sys.stderr = stderr


# How Dagster's log handler begins what it prints on stderr when it cannot store an event, before
# it raises the error (which the run reports) for any event of Dagster's own.
EVENT_LOG_FAILURE = "Exception while writing logger call to event log"


class _Unprinted:
    """A stream without the writes that begin with `prefix`."""

    def __init__(self, stream, prefix: str):
        self._stream, self._prefix = stream, prefix

    def write(self, text: str) -> int:
        return len(text) if text.startswith(self._prefix) else self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _run_main(settings: Settings, echo: Callable[[str], None], switch_live: bool,
              tags: dict[str, str], stopped: Callable[[], bool]) -> MainRunReport:
    started = time.monotonic()
    db = ensure_database(settings)
    with db.connect() as conn:
        schema.ensure_schema(conn)
        versions.home_follows_live(conn, settings.home)
    prepare_dagster_env(settings, db)
    defs = build_definitions(settings.sources_file)
    instance = executing_instance()
    outcomes = _ingest_sources(defs, instance, settings, echo, tags, stopped)
    failed = [o.source_id for o in outcomes if not o.ok]
    expected = {o.source_id: str(o.facts.get("chunks", {}).get("fingerprint", "")) for o in outcomes if o.ok}
    echo("index: size distribution, embeddings lookup, pgvector table …")
    # This process holds the writer lock for the whole run (run_main); the build, in process, knows it.
    # The rule of the UI's and the sensor's builds: a failed source keeps its last good chunks and
    # the rest moves on; the report names it and the command exits 1.
    index_config = IndexConfig(failed_sources=failed, switch_live=switch_live, expected_chunks=expected)
    result = _execute(defs, INDEX_JOB, instance, tags, run_config=_run_config(search_index=index_config))
    if _interrupted(result):
        raise Interrupted("stopped while building the index (a version goes live only when its build commits)")
    index = {"ok": result.success, "run_id": result.run_id, **_facts(result, ["search_index"]).get("search_index", {})}
    if not result.success:
        index["error"] = _failure_message(result, settings.home)
    if index.get("awaits_gate"):
        why = index.get("held_back_because") or "the chunking rules changed"
        index.update(_gate_held_back(defs, instance, tags, str(index["version"]), why, echo, settings.home))
    report = MainRunReport(outcomes, index, _stage_seconds(instance, result.run_id), time.monotonic() - started)
    echo(_describe_index(report))
    return report


def _gate_held_back(defs, instance: DagsterInstance, tags: dict[str, str], candidate: str, why: str,
                    echo: Callable[[str], None], home: Path) -> dict[str, object]:
    """The migration gate over a version the build held back (`why`: a rule or model change), as
    `lectio migrate` runs it with its defaults: what it decided, for the run's index report."""
    echo(f"{why}: gate: scoring {candidate} and the live index …")
    result = _gate(defs, instance, tags, EvaluationConfig(candidate=candidate), GateConfig())
    if not result.success:
        return {"gate": {"passed": False, "reason": f"the gate failed: {_failure_message(result, home)}"}}
    gate = result.output_for_node("live_index")
    now = (f"switched {gate['live']} -> {candidate}" if gate["switched"]
           else f"kept {gate['live']} live; {candidate} not switched in")
    decided = f"{why}, so the migration gate decided: {gate['decision']}: {gate['reason']}"
    return {"gate": gate, "live": gate["switched"], "live_index": f"{now} by the migration gate", "decision": decided}


def _gate(defs, instance: DagsterInstance, tags: dict[str, str], evaluation: EvaluationConfig, gate: GateConfig):
    """The gate job (score the candidate beside the live version, then switch or refuse), in process,
    with the operator's settings: `lectio migrate`'s flags may loosen what a UI run may only narrow."""
    with operators_settings():
        return _execute(defs, GATE_JOB, instance, tags, run_config=_run_config(index_evaluation=evaluation,
                                                                                live_index=gate))


def _input_fingerprints(settings: Settings, echo: Callable[[str], None]) -> dict[str, str | None]:
    """Each source's input fingerprint, the SWORD modules this machine lacks fetched first and the
    embedding runtime settled on what the fetched inputs weigh (the model id is in every print)."""
    if input_bytes(settings.sources_file, settings.corpus_dir) is None:  # a module not fetched yet
        echo("fetching the SWORD modules this machine lacks …")
        fetch_missing_modules(settings.sources_file, settings.corpus_dir)
    settle_runtime(settings.sources_file, settings.corpus_dir)
    return input_fingerprints(settings.sources_file, settings.corpus_dir)


def _ingest_sources(defs, instance: DagsterInstance, settings: Settings, echo: Callable[[str], None],
                    tags: dict[str, str], stopped: Callable[[], bool]) -> list[SourceOutcome]:
    """Each source through the ingest job in its own run, or reused where its inputs are unchanged;
    Interrupted once a run ends after SIGINT or SIGTERM (`stopped`), even where the run finished."""
    ids = source_ids(settings.sources_file)
    prints = _input_fingerprints(settings, echo)
    # Observed before the runs, so each run's materializations record the inputs they were made from.
    for observation in source_observations(prints):
        instance.report_runless_asset_event(observation)
    outcomes = []
    for position, source_id in enumerate(ids, start=1):
        t0 = time.monotonic()
        inputs = prints.get(source_id)
        reused = _unchanged(instance, source_id, inputs)
        if reused is not None:
            reused.seconds = time.monotonic() - t0
            outcomes.append(reused)
            echo(f"[{position}/{len(ids)}] {source_id}: unchanged since run {reused.run_id[:8]}, "
                 "its chunks and embeddings reused")
            continue
        echo(f"[{position}/{len(ids)}] {source_id}: reading, parsing, chunking, embedding …")
        result = _execute(defs, INGEST_JOB, instance, tags, run_config=_run_config(), partition_key=source_id)
        if _interrupted(result) or stopped():
            raise Interrupted(f"stopped while reading {source_id}")
        # A bad entry ends the run successfully, having read nothing (assets.source_assets).
        entry = entry_failure(result.all_events)
        ok = result.success and entry is None
        outcomes.append(SourceOutcome(source_id, ok, time.monotonic() - t0, _stage_seconds(instance, result.run_id),
                                      _facts(result, ["parsed_structure", "chunks", "embeddings"]),
                                      None if ok else entry or _failure_message(result, settings.home), result.run_id))
        echo(_describe(outcomes[-1]))
    return outcomes


def _unchanged(instance: DagsterInstance, source_id: str, inputs: str | None) -> SourceOutcome | None:
    """The outcome of the source's latest ingest, by whatever run made it (the UI's, a sensor's or
    this command's), when raw_texts recorded exactly these inputs and the later stages' stored
    outputs are that same successful run's (no other run stored its own since); None when the
    source must go through ingest again."""
    if inputs is None:
        return None
    latest = {}
    for name in INGEST_ASSETS:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(name), asset_partitions=[source_id]), limit=1).records
        if not records:
            return None
        latest[name] = records[0]
    run_id = latest["raw_texts"].run_id
    recorded = latest["raw_texts"].asset_materialization.metadata.get(INPUTS_KEY)
    if recorded is None or recorded.value != inputs or any(r.run_id != run_id for r in latest.values()):
        return None
    run = instance.get_run_by_id(run_id)
    if run is None or run.status != DagsterRunStatus.SUCCESS:
        return None
    facts = {name: {k: v.value for k, v in latest[name].asset_materialization.metadata.items()
                    if isinstance(v.value, (int, float, str, bool))} for name in INGEST_ASSETS[1:]}
    facts["embeddings"] = {**facts["embeddings"], "embedded": 0, "embed_seconds": 0.0,
                           "reused_from_cache": facts["embeddings"].get("chunks", 0)}
    return SourceOutcome(source_id, True, 0.0, {}, facts, None, run_id, reused=True)


@contextmanager
def _stop_on_signals() -> Iterator[Callable[[], bool]]:
    """Make SIGINT and SIGTERM stop the whole job. While a run executes, Dagster takes both
    signals and ends that run as interrupted (see _interrupted); without this, the loop went on
    to the next source. Between runs, this handler raises at once. Yields whether either signal
    has arrived since, whichever handler took it: Dagster's raises inside the step's code, where
    any bare `except:` can swallow it and the run then succeeds."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False  # signal handlers belong to the main thread
        return

    def stop(signum, _frame):
        raise Interrupted(f"stopped by {signal.Signals(signum).name}")

    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, stop)
    try:
        with _signals_seen() as seen:
            yield lambda: bool(seen() & {signal.SIGINT, signal.SIGTERM})
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def _signals_seen() -> Iterator[Callable[[], set[int]]]:
    """The signals that have arrived since, by Python's wakeup fd: the interpreter writes each
    signal's number there before any Python handler runs, so one a handler swallowed is counted."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    seen: set[int] = set()

    def arrived() -> set[int]:
        try:
            while data := reader.recv(64):
                seen.update(data)
        except BlockingIOError:
            pass
        return seen

    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield arrived
    finally:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()


def _interrupted(result) -> bool:
    return any(
        event.event_type == DagsterEventType.RUN_FAILURE
        and getattr(event.event_specific_data, "error", None) is not None
        and event.event_specific_data.error.cls_name == "DagsterExecutionInterruptedError"
        for event in result.all_events
    )


def _stage_seconds(instance: DagsterInstance, run_id: str) -> dict[str, float]:
    return {
        s.step_key: round(s.end_time - s.start_time, 2)
        for s in instance.get_run_step_stats(run_id)
        if s.start_time and s.end_time
    }


def _facts(result, assets: list[str]) -> dict[str, dict]:
    facts = {}
    for name in assets:
        try:
            events = result.asset_materializations_for_node(name)
        except Exception:  # the step never ran
            continue
        for event in events:
            facts[name] = {k: v.value for k, v in event.metadata.items() if isinstance(v.value, (int, float, str, bool))}
    return facts


def _failure_message(result, home: Path) -> str:
    if said := _full_disk(result.all_events):
        return full_disk_line(said, home)
    # A blocking check that failed (ACL, headers, ids) says what is wrong in its description;
    # the step's error only says that a check failed.
    for event in result.all_events:
        evaluation = event.event_specific_data if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION else None
        if evaluation is not None and not evaluation.passed:
            if evaluation.blocking and evaluation.description:
                return evaluation.description
    if cause := root_cause(result.all_events):
        return cause[1]
    return "failed (see the run in the Dagster UI)"


def _full_disk(events) -> str | None:
    """What said the disk was full, where a step failed on it: the outermost error of the chain
    that says so, which names the file where the innermost may not (the ONNX export's OSError
    names none; the export's own error names the model folder)."""
    for event in events:
        error = event.step_failure_data.error if event.is_step_failure and event.step_failure_data else None
        while error is not None:
            if error.cls_name == "DiskFull" or NO_SPACE in error.message:
                first = error.message.strip().splitlines()[0]
                return re.sub(rf"^[\w.]*{re.escape(error.cls_name or '')}: ", "", first)
            error = error.cause
    return None


def _describe(o: SourceOutcome) -> str:
    if not o.ok:
        return f"    FAILED {o.source_id}: {o.error}"
    chunks = o.facts.get("chunks", {})
    embed = o.facts.get("embeddings", {})
    parsed = o.facts.get("parsed_structure", {})
    parts = []
    if "verses" in parsed:
        parts.append(f"{parsed['verses']:,} verses ({parsed['empty_verses']} empty slots)")
    counts = ", ".join(f"{v:,} {k.removeprefix('chunks_')}" for k, v in chunks.items() if k.startswith("chunks_"))
    parts.append(f"{chunks.get('chunks', 0):,} chunks ({counts})")
    parts.append(f"{embed.get('embedded', 0):,} embedded, {embed.get('reused_from_cache', 0):,} reused")
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in o.stages.items())
    return f"    ok {o.source_id}: " + "; ".join(parts) + f" — {o.seconds:.1f}s [{stages}]"


def _describe_index(report: MainRunReport) -> str:
    index = report.index
    if not index.get("ok"):
        line = f"index FAILED: {index.get('error')}"
    else:
        how = "reused (unchanged)" if index.get("reused_existing_version") else "built"
        line = f"index {index.get('version')} {how}: {index.get('rows', 0):,} rows; {index.get('decision')}"
    lines = [line, f"done in {report.seconds:.1f}s ({report.model_seconds:.1f}s of it in the embedding model, "
                   f"{report.seconds - report.model_seconds:.1f}s everything else)"]
    if report.failed:
        lines.append(f"{len(report.failed)} source(s) failed:")
        lines += [f"  - {o.source_id}: {o.error}" for o in report.failed]
    return "\n".join(lines)


# ---------------------------------------------------------------- `lectio migrate`


@dataclass
class MigrationReport:
    ok: bool
    reason: str
    candidate: str | None
    build: dict  # the main run's report (sources, index), as `lectio run --json` prints it
    gate: dict | None  # lectio.evaluation.migration_gate.GateResult.to_json(), when the gate ran
    seconds: float

    @property
    def embeddings(self) -> dict[str, int]:
        embedded = sum(s["facts"].get("embeddings", {}).get("embedded", 0) for s in self.build["sources"])
        reused = sum(s["facts"].get("embeddings", {}).get("reused_from_cache", 0) for s in self.build["sources"])
        return {"embedded": embedded, "reused": reused}

    def to_json(self) -> dict:
        return {"ok": self.ok, "reason": self.reason, "candidate": self.candidate, "seconds": round(self.seconds, 1),
                "embeddings": self.embeddings, "gate": self.gate, "build": self.build}


def run_migration(settings: Settings, query_sets: list[str] | None = None, tolerances: dict[str, float] | None = None,
                  keep: int = retention.DEFAULT_KEEP, k: int = 20, mode: str = "hybrid",
                  echo: Callable[[str], None] = print) -> MigrationReport:
    """Build the candidate beside the live index (the main job, without switching), then run
    the gate job on it. The live index answers throughout; only the gate's switch changes it.
    Raises locks.WriterBusy while another writer holds the database."""
    paths = [str(p) for p in (query_sets or migration_gate.DEFAULT_QUERY_SETS)]
    migration_gate.load_query_sets(paths)  # a bad query file fails now, not after the build
    tolerances = migration_gate.check_tolerances(migration_gate.DEFAULT_TOLERANCES if tolerances is None else tolerances)
    with ensure_database(settings).connect() as conn, locks.writer_lock(conn, "this migration"):
        return _migrate(settings, paths, tolerances, keep, k, mode, echo)


def _migrate(settings: Settings, paths: list[str], tolerances: dict[str, float], keep: int, k: int, mode: str,
             echo: Callable[[str], None]) -> MigrationReport:
    started = time.monotonic()
    build = run_main(settings, echo=echo, switch_live=False, locked=True, command="lectio migrate")
    index = build.index
    candidate = index.get("version") if index.get("ok") else None

    def done(ok, reason, gate=None):
        return MigrationReport(ok, reason, candidate, build.to_json(), gate, time.monotonic() - started)

    # A candidate missing a source (it failed, or its chunks failed a blocking quality check)
    # holds the other sources' new chunks but is not the migration that was asked for.
    problems = [f"{o.source_id}: {o.error}" for o in build.failed]
    if not index.get("ok"):
        problems.append(f"the index build failed: {index.get('error')}")
    if index.get("quality_failures") not in (None, "none"):
        problems.append(f"blocking quality checks failed: {index['quality_failures']}")
    if problems:
        return done(False, "candidate not gated: " + "; ".join(problems))

    echo(f"gate: scoring {candidate} and the live index on {', '.join(paths)} …")
    defs = build_definitions(settings.sources_file)
    result = _gate(defs, executing_instance(), {LAUNCHED_BY_TAG: "lectio migrate"},
                   EvaluationConfig(query_sets=paths, k=k, mode=mode, candidate=candidate),
                   GateConfig(tolerances=tolerances, keep=keep))
    if not result.success:
        return done(False, f"the gate failed: {_failure_message(result, settings.home)}")
    gate = result.output_for_node("live_index")
    return done(gate["passed"], gate["reason"], gate)
