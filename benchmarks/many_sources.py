"""What a run costs per source as the number of sources grows: N one-paragraph documents.

A run's work for a one-paragraph document is a constant (read, chunk, embed one chunk, a few
Dagster events), so its wall time should be linear in N and the seconds per source flat. This
makes N markdown documents (`kind: document`, `acl: [public]`) in a temp folder, in either or
both layouts:

- `distinct`: each entry names its own file;
- `shared`: every entry names the same one file;

and runs `lectio run --sources F --json` on them in a fresh LECTIO_HOME (its own embedded
PostgreSQL and Dagster instance; LECTIO_EMBED_BACKEND=onnx and LECTIO_EMBED_PRECISION=fp32 so no
runtime is measured first). With --history K it then edits every file and runs again, K times:
each run leaves its events in the instance, as a schedule's nightly runs do. Reported per
(layout, N, run): wall seconds, seconds per source, the mean ingest seconds of the first and the
last ten sources (what grows within one run) and of the `source_inputs` step; then, per layout
and run, how the seconds per source grow from the smallest N to each larger one (1.0: flat).

    python benchmarks/many_sources.py --sizes 10,100 --history 1
    python benchmarks/many_sources.py --sizes 10,100,1000 --layouts shared,distinct --history 1

Everything is made under one temp folder, removed at the end (--keep keeps it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from homes import PROJECT, home_env  # run from benchmarks/, beside it

sys.path.insert(0, str(PROJECT))

PARAGRAPH = ("Document {i} of {n}, revision {rev}: a short paragraph of plain prose, long enough to be one "
             "chunk and no more, about patience, hope and the reading of old books in good company.")


def write_sources(folder: Path, n: int, layout: str, rev: int) -> Path:
    """N entries and their document(s) under `folder`; `rev` changes every file's text."""
    docs = folder / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    lines = ["sources:"]
    for i in range(1, n + 1):
        name = "shared.md" if layout == "shared" else f"doc-{i:04d}.md"
        if layout == "distinct" or i == 1:
            (docs / name).write_text(f"# Note {i}\n\n{PARAGRAPH.format(i=i, n=n, rev=rev)}\n", encoding="utf-8")
        lines += [f"  - id: doc-{i:04d}", "    kind: document", "    format: markdown",
                  f"    path: docs/{name}", f"    title: Document {i}", "    acl: [public]", ""]
    sources = folder / "sources.yaml"
    sources.write_text("\n".join(lines), encoding="utf-8")
    return sources


def run_once(sources: Path, home: Path) -> dict:
    """One `lectio run`, timed from outside; its JSON report's per-source seconds."""
    started = time.perf_counter()
    done = subprocess.run(["lectio", "run", "--sources", str(sources), "--json"], env=home_env(home), cwd=PROJECT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"lectio run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return summarise(report, wall, done.returncode)


def summarise(report: dict, wall: float, rc: int) -> dict:
    sources = report["sources"]
    seconds = [s["seconds"] for s in sources]
    inputs = [s["stages"].get("source_inputs", 0.0) for s in sources if s["stages"]]
    return {
        "rc": rc,
        "failed": sum(not s["ok"] for s in sources),
        "reused": sum(bool(s["reused"]) for s in sources),
        "wall_s": round(wall, 1),
        "s_per_source": round(wall / len(sources), 3),
        "first10_mean_s": round(statistics.fmean(seconds[:10]), 3),
        "last10_mean_s": round(statistics.fmean(seconds[-10:]), 3),
        "source_inputs_first10_s": round(statistics.fmean(inputs[:10]), 3) if inputs else None,
        "source_inputs_last10_s": round(statistics.fmean(inputs[-10:]), 3) if inputs else None,
        "index_s": round(sum(report.get("index_stages", {}).values()), 1),
    }


def measure(root: Path, layout: str, n: int, history: int) -> list[dict]:
    """A cold run over N fresh sources, then `history` runs each after editing every file."""
    folder, home = root / f"{layout}-{n}", root / f"home-{layout}-{n}"
    home.mkdir(parents=True)
    home.chmod(0o755)  # run as root, the embedded server runs as its own user, which must reach it
    runs = []
    try:
        for rev in range(history + 1):
            sources = write_sources(folder, n, layout, rev)
            runs.append({"layout": layout, "n": n, "run": rev, **run_once(sources, home)})
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        subprocess.run(["lectio", "down"], env=home_env(home), cwd=PROJECT, capture_output=True)
    return runs


def growth(results: list[dict]) -> list[dict]:
    """Seconds per source at each N over those at the smallest N, per layout and run."""
    rows = []
    for layout in dict.fromkeys(r["layout"] for r in results):
        for run in dict.fromkeys(r["run"] for r in results):
            same = sorted((r for r in results if r["layout"] == layout and r["run"] == run), key=lambda r: r["n"])
            rows += [{"layout": layout, "run": run, "from_n": same[0]["n"], "to_n": r["n"],
                      "s_per_source_ratio": round(r["s_per_source"] / same[0]["s_per_source"], 2)} for r in same[1:]]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100", help="comma-separated N (default 10,100)")
    parser.add_argument("--layouts", default="shared,distinct", help="shared, distinct or both")
    parser.add_argument("--history", type=int, default=0, help="runs after the first, each after editing every file")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (its path is printed)")
    args = parser.parse_args()
    from lectio.embedding import numerics, onnx_runtime

    root = Path(tempfile.mkdtemp(prefix="lectio-many-"))
    root.chmod(0o755)
    try:
        results = [r for layout in args.layouts.split(",") for n in map(int, args.sizes.split(","))
                   for r in measure(root, layout, n, args.history)]
        print(json.dumps({"cpu": f"{numerics.cpu_model()}, {onnx_runtime.cores()} cores",
                          "results": results, "growth": growth(results)}, indent=2))
        return 0 if all(r["rc"] == 0 and not r["failed"] for r in results) else 1
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
