"""The code location benchmarks/ui_run_time.py launches from: lectio's definitions with the ingest
job on the executor named by LECTIO_BENCH_EXECUTOR (in_process, as shipped; multiprocess, a process
per step; forkserver, a process per step forked from one that imported lectio, Dagster and torch)."""

import os

from dagster import in_process_executor, multiprocess_executor

from pipelines.definitions import build_definitions

PRELOAD = ["pipelines.definitions", "lectio.embedding.model", "torch", "pandas"]
EXECUTORS = {
    "in_process": in_process_executor,
    "multiprocess": multiprocess_executor,
    "forkserver": multiprocess_executor.configured({"start_method": {"forkserver": {"preload_modules": PRELOAD}}}),
}

defs = build_definitions(ingest_executor=EXECUTORS[os.environ.get("LECTIO_BENCH_EXECUTOR", "in_process")])
