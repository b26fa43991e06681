"""Chunking time per source, and a digest of every chunk it makes.

For each source: read and parse (not timed), then chunk, timed as wall seconds and as this
process's CPU seconds (the better figure on a shared machine), per source and per 1,000 chunks.
The digest covers every field of every chunk (id, text, header, refs, metadata, tokens, …), so
running this on two commits shows whether a change to the chunking code changed its output:
equal digests, equal chunks.

    LECTIO_CORPUS_DIR=.lectio/corpus python benchmarks/chunking.py web tdavid [--sources data/sources.yaml]

Each source runs in a fresh process, so no source's chunking warms a cache another one uses.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def digest(chunks) -> str:
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(json.dumps(asdict(chunk), sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def measure(sources_file: Path, source_id: str, corpus_dir: Path) -> dict:
    from lectio.rulesets import registry
    from lectio.sources import load_source

    parsed = registry.parse_source(registry.read_source(load_source(sources_file, source_id), corpus_dir))
    wall, cpu = time.perf_counter(), time.process_time()
    chunks = registry.chunk_source(parsed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    per_thousand = 1000 / max(len(chunks), 1)
    return {
        "source": source_id,
        "chunks": len(chunks),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "cpu_s_per_1000_chunks": round(cpu * per_thousand, 2),
        "digest": digest(chunks),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="source ids")
    parser.add_argument("--sources-file", default=str(PROJECT / "data" / "sources.yaml"))
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the per-source child
    args = parser.parse_args()
    corpus_dir = Path(os.environ.get("LECTIO_CORPUS_DIR", PROJECT / ".lectio" / "corpus"))
    if args.one:
        print(json.dumps(measure(Path(args.sources_file), args.sources[0], corpus_dir)))
        return 0
    for source_id in args.sources:
        child = [sys.executable, __file__, source_id, "--one", "--sources-file", args.sources_file]
        result = subprocess.run(child, capture_output=True, text=True, cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT)})
        print(result.stdout.strip() if result.returncode == 0 else json.dumps({"source": source_id, "error": result.stderr[-500:]}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
