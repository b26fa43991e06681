"""One source's ingest launched as the UI launches it against the same source in `lectio run`.

The UI path, for real: a `dagster-daemon` on a throwaway LECTIO_HOME, a run submitted to the
instance with `dagster job launch` (QUEUED, with its code-location origin, as the UI's
Materialize button does); the daemon's run queue dequeues it and the default run launcher starts
its worker process. Timed from the run's creation to its end (the run record), so the figure is
what the UI shows as queued-to-done. The daemon is started, and the code location loaded, before
the clock starts, as a user's `lectio dev` is.

`lectio run`'s figure is the source's time in `run_main` (its ingest run in process, the model
loaded in it; imports done before), i.e. the `— 12.3s` that `lectio run` prints for the source.
The embedding cache is emptied before every timed run, so each embeds every chunk.

With --to-searchable, the figure a user feels (issue 37, item 4): the `index_after_batch`
sensor is on in the daemon, and the UI side is timed from the ingest run's creation to the end of
the `build_index` run that follows it (the source is searchable): queued by the ingest run itself
as it ends its batch (pipelines.batches), or else by the sensor's next pass; `lectio run`'s side is
its whole run of the same source (ingest and index). The sensor is stopped while `lectio run`
works (it holds the writer lock, which a sensor's build would meet). Beside it, in the same
rounds, `lectio run` as a user types it: a fresh process, timed by the wall clock from its start
to its exit (imports, the model's load, ingest and index), the figure a terminal shows; the UI's
worker pays the same imports and load, so this is the like-for-like baseline of the two.

    python benchmarks/ui_run_time.py [--source kjv] [--executor in_process|multiprocess|forkserver]
                                     [--to-searchable]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

PROJECT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default="kjv", help="a source id of tests/fixtures/sources.yaml")
    parser.add_argument("--executor", default="in_process", choices=["in_process", "multiprocess", "forkserver"])
    parser.add_argument("--repeat", type=int, default=2, help="launched runs (alternating with lectio run)")
    parser.add_argument("--to-searchable", action="store_true",
                        help="time UI ingest to the end of the index run the sensor requests, against all of lectio run")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="lectio-ui-run-"))
    home.chmod(0o755)
    sources = _one_source(home / "sources", args.source)
    os.environ.update({"LECTIO_HOME": str(home), "LECTIO_SOURCES": str(sources), "LECTIO_BENCH_EXECUTOR": args.executor})
    os.environ.setdefault("LECTIO_CORPUS_DIR", str(PROJECT / ".lectio" / "corpus"))
    os.environ.pop("DATABASE_URL", None)
    from lectio.index.database import ensure_database, stop_embedded
    from lectio.settings import load_settings
    from pipelines.home import prepare_dagster_env

    settings = load_settings()
    db = ensure_database(settings)
    runtime = _choose_runtime()
    env = {**os.environ, **prepare_dagster_env(settings, db), "PYTHONWARNINGS": "ignore::Warning"}
    workspace = _workspace(home)
    daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], cwd=PROJECT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from dagster import DagsterInstance

        instance = DagsterInstance.get()
        _wait_for_daemon(instance)
        launched, phases, in_lectio_run, cli_process = [], [], [], []
        for _ in range(args.repeat):
            _empty_cache(db)
            if args.to_searchable:
                _sensor(workspace, env, "start")
            seconds, phase = _launch(instance, workspace, env, args.source)
            if args.to_searchable:
                seconds, phase = _until_searchable(instance, seconds, phase)
                _sensor(workspace, env, "stop")
            launched.append(seconds)
            phases.append(phase)
            _fresh_start(instance, db, args.source)
            in_lectio_run.append(_lectio_run(settings, args.source, whole=args.to_searchable))
            if args.to_searchable:
                _fresh_start(instance, db, args.source)
                cli_process.append(_lectio_run_process(env, args.source))
        print(json.dumps({
            "measure": "ui_ingest_to_searchable / lectio_run" if args.to_searchable else "ui_ingest / lectio_run_source",
            "source": args.source, "executor": args.executor, "embedding_runtime": runtime,
            "launched_s": launched, "launched_phases_s": phases, "lectio_run_s": in_lectio_run,
            "ratio_best": round(min(launched) / min(in_lectio_run), 2),
            "ratio_median": round(_median(launched) / _median(in_lectio_run), 2),
            **({"lectio_run_process_s": cli_process,
                "ratio_to_process_best": round(min(launched) / min(cli_process), 2),
                "ratio_to_process_median": round(_median(launched) / _median(cli_process), 2)} if cli_process else {}),
        }, indent=2))
        return 0
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        stop_embedded(settings)
        shutil.rmtree(home, ignore_errors=True)


def _choose_runtime() -> str:
    """The home's embedding runtime measured before any clock starts: a home's first run measures
    it (minutes on a busy machine), which neither side should be charged for. With
    LECTIO_EMBED_BACKEND and LECTIO_EMBED_PRECISION both set, no run measures, nor does this.
    Returns the ingest runtime both sides embed with, as backend/precision, for the report."""
    from lectio.embedding import runtime_choice
    from lectio.embedding.model import MODEL_NAME, release_of

    backend, precision = os.environ.get("LECTIO_EMBED_BACKEND"), os.environ.get("LECTIO_EMBED_PRECISION")
    if backend and precision:
        return f"{backend}/{precision} (set)"
    record = runtime_choice.measured(MODEL_NAME, release_of(MODEL_NAME))
    return f"{backend or record['backend']}/{precision or record['precision']} (measured; quiet: {record.get('quiet')})"


def _one_source(folder: Path, source_id: str) -> Path:
    """A sources file holding one entry of the fixtures (their files copied beside it)."""
    shutil.copytree(PROJECT / "tests" / "fixtures", folder)
    entries = yaml.safe_load((folder / "sources.yaml").read_text())["sources"]
    (folder / "sources.yaml").write_text(yaml.safe_dump({"sources": [e for e in entries if e["id"] == source_id]}))
    return folder / "sources.yaml"


def _workspace(home: Path) -> Path:
    path = home / "workspace.yaml"
    path.write_text(yaml.safe_dump({"load_from": [{"python_file": {
        "relative_path": str(PROJECT / "benchmarks" / "ui_run_variants.py"), "attribute": "defs",
        "working_directory": str(PROJECT), "location_name": "lectio"}}]}))
    return path


def _wait_for_daemon(instance, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "QUEUED_RUN_COORDINATOR" in instance.get_daemon_heartbeats():
            return
        time.sleep(1)
    raise RuntimeError("the daemon sent no heartbeat")


def _empty_cache(db) -> None:
    from lectio.index.schema import ensure_schema

    with db.connect() as conn:
        ensure_schema(conn)
        conn.execute("DELETE FROM embedding_cache")


def _fresh_start(instance, db, source_id: str) -> None:
    """Every run of this throwaway home forgotten and the cache emptied, so the next run reads,
    chunks and embeds the source afresh (a run finds a source unchanged since any earlier run)."""
    from dagster import RunsFilter

    for record in instance.get_run_records(filters=RunsFilter(tags={"dagster/partition": source_id})):
        instance.delete_run(record.dagster_run.run_id)
    _empty_cache(db)


def _launch(instance, workspace: Path, env: dict, source_id: str) -> tuple[float, dict]:
    """Submit one partition's run to the instance and wait for it: its queued-to-done seconds,
    and where they went (in the queue, starting the worker process, running the steps)."""
    from dagster import DagsterEventType, DagsterRunStatus

    run_id = str(uuid.uuid4())
    subprocess.run([str(BIN / "dagster"), "job", "launch", "-w", str(workspace), "-j", "ingest_source",
                    "--run-id", run_id, "--tags", json.dumps({"dagster/partition": source_id})],
                   cwd=PROJECT, env=env, check=True, capture_output=True)
    while True:
        record = instance.get_run_record_by_id(run_id)
        if record.dagster_run.is_finished:
            break
        time.sleep(0.5)
    if record.dagster_run.status != DagsterRunStatus.SUCCESS:
        from assets.outcomes import root_cause

        cause = root_cause(e.dagster_event for e in instance.all_logs(run_id) if e.is_dagster_event)
        raise RuntimeError(f"the launched run {run_id} ended {record.dagster_run.status.value}: {cause}")
    created = record.create_timestamp.timestamp()
    stamps = {e.dagster_event_type: e.timestamp for e in instance.all_logs(run_id) if e.is_dagster_event}
    dequeued, started = stamps[DagsterEventType.RUN_STARTING], stamps[DagsterEventType.RUN_START]
    phases = {"queued": round(dequeued - created, 1), "worker_start": round(started - dequeued, 1),
              "steps": round(record.end_time - started, 1)}
    return round(record.end_time - created, 1), phases


def _lectio_run(settings, source_id: str, whole: bool = False) -> float:
    """The source's seconds in `lectio run`, or with `whole` the run's (ingest and index)."""
    from pipelines.runners import run_main

    report = run_main(settings, echo=lambda _: None)
    (outcome,) = [o for o in report.sources if o.source_id == source_id]
    if not outcome.ok or outcome.facts.get("embeddings", {}).get("embedded", 0) == 0:
        raise RuntimeError(f"lectio run did not ingest {source_id} afresh: {outcome}")
    if whole and not report.index.get("ok"):
        raise RuntimeError(f"lectio run did not index: {report.index}")
    return round(report.seconds if whole else outcome.seconds, 1)


def _lectio_run_process(env: dict, source_id: str) -> float:
    """Wall seconds of `lectio run --json` in a fresh process, as a user runs it from a terminal."""
    started = time.perf_counter()
    done = subprocess.run([str(BIN / "lectio"), "run", "--json"], cwd=PROJECT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    report = json.loads(done.stdout or "{}")
    fresh = [s for s in report.get("sources", []) if s.get("source_id") == source_id and s.get("ok")
             and s.get("facts", {}).get("embeddings", {}).get("embedded", 0) > 0]
    if done.returncode != 0 or not fresh:
        raise RuntimeError(f"lectio run did not ingest {source_id}: {done.stderr.strip()[-300:]}")
    return round(seconds, 1)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _sensor(workspace: Path, env: dict, action: str) -> None:
    subprocess.run([str(BIN / "dagster"), "sensor", action, "-w", str(workspace), "index_after_batch"],
                   cwd=PROJECT, env=env, check=True, capture_output=True)


def _until_searchable(instance, ingest_seconds: float, phases: dict, timeout: float = 600) -> tuple[float, dict]:
    """Wait for the build_index run that follows the ingest run that just ended (queued by that
    run itself as it ended, its id in the run's lectio/index_requested tag; else requested by the
    sensor at its next pass): the ingest run's seconds plus the index run's request, queue and
    steps. `index_requested` is the index run's creation less the ingest run's end: negative when
    the ingest run asked for it."""
    from datetime import datetime, timezone

    from dagster import DagsterEventType, DagsterRunStatus, RunsFilter

    from assets.names import INDEX_REQUESTED_TAG

    (ingest,) = instance.get_run_records(RunsFilter(job_name="ingest_source"), limit=1)  # the one just launched
    ingest_end = ingest.end_time
    asked = ingest.dagster_run.tags.get(INDEX_REQUESTED_TAG)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        records = (instance.get_run_records(RunsFilter(run_ids=[asked])) if asked else instance.get_run_records(
            RunsFilter(job_name="build_index", created_after=datetime.fromtimestamp(ingest_end, tz=timezone.utc)), limit=1))
        if records and records[0].dagster_run.is_finished:
            break
        time.sleep(0.5)
    else:
        raise RuntimeError("no build_index run followed the ingest run")
    record = records[0]
    if record.dagster_run.status != DagsterRunStatus.SUCCESS:
        raise RuntimeError(f"the index run {record.dagster_run.run_id} ended {record.dagster_run.status.value}")
    run_id = record.dagster_run.run_id
    stamps = {e.dagster_event_type: e.timestamp for e in instance.all_logs(run_id) if e.is_dagster_event}
    created = record.create_timestamp.timestamp()
    index = {"index_requested": round(created - ingest_end, 1),
             "sensor_tick_gaps": _tick_gaps(instance, ingest.create_timestamp.timestamp(), created),
             "index_queued_and_start": round(stamps[DagsterEventType.RUN_START] - created, 1),
             "index_steps": round(record.end_time - stamps[DagsterEventType.RUN_START], 1)}
    return round(ingest_seconds + record.end_time - ingest_end, 1), {**phases, **index}


def _tick_gaps(instance, since: float, until: float) -> list[float]:
    """Seconds between index_after_batch's ticks from the ingest run's creation to the index
    run's: the daemon's sensor loop comes round every 5 s, a tick at most that often."""
    (state,) = [s for s in instance.all_instigator_state() if s.name == "index_after_batch"]
    ticks = sorted(t.timestamp for t in instance.get_ticks(state.instigator_origin_id, state.selector_id,
                                                           after=since, before=until + 1))
    return [round(later - earlier, 1) for earlier, later in zip(ticks, ticks[1:])]


if __name__ == "__main__":
    raise SystemExit(main())
