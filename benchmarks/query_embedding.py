"""One query's embedding on one thread, torch against ONNX Runtime, and a process's time to its first.

p50/p95 of `Embedder.encode([query])` over the queries of data/queries/*.jsonl, on a thread set
up as the search's query pool sets its threads up (`one_model_thread`: torch on one thread;
ONNX Runtime's query session, one intra-op thread that does not spin), each backend timed in
turn over `--rounds` passes, each going first in one. Then, in a fresh process per backend:
the seconds from the first import to the first query's vector (imports, model load, the
embedding), and whether torch, transformers or sentence-transformers were imported on the way.

    LECTIO_HOME=/tmp/bench python benchmarks/query_embedding.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from lectio.embedding import numerics, onnx_runtime
from lectio.embedding.model import Embedder, ModelChoice, one_model_thread
from lectio.settings import PROJECT_ROOT

from backend_equivalence import queries

FIRST = """
import sys, time
t0 = time.perf_counter()
from lectio.embedding.model import Embedder
Embedder().encode(["what does the Bible say about forgiving others"])
print(time.perf_counter() - t0, *[m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules])
"""


def first_embedding(backend: str) -> dict:
    env = {**os.environ, "LECTIO_EMBED_BACKEND": backend}
    out = subprocess.run([sys.executable, "-c", FIRST], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return {"seconds": round(float(out[0]), 3), "imported": out[1:]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    qs = queries()
    embedders = {"torch": Embedder(choice=ModelChoice()), "onnx": Embedder(choice=replace(ModelChoice(), backend="onnx"))}
    names = list(embedders)
    latencies: dict[str, list[float]] = {name: [] for name in names}
    with ThreadPoolExecutor(max_workers=1, initializer=one_model_thread) as pool:
        def one(name: str, query: str) -> float:
            t0 = time.perf_counter()
            embedders[name].encode([query])
            return time.perf_counter() - t0

        for name in names:  # warm up: load, kernels
            for q in qs[:20]:
                pool.submit(one, name, q).result()
        for round_ in range(args.rounds):
            turn = round_ % len(names)
            for name in names[turn:] + names[:turn]:
                latencies[name] += [pool.submit(one, name, q).result() for q in qs]
    report = {"cpu": f"{numerics.cpu_model()}, {onnx_runtime.cores()} cores", "queries": len(qs), "rounds": args.rounds}
    for name in names:
        ms = np.asarray(latencies[name]) * 1000
        report[name] = {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2),
                        "mean_ms": round(float(ms.mean()), 2)}
    report["p50_torch_over_onnx"] = round(report["torch"]["p50_ms"] / report["onnx"]["p50_ms"], 2)
    report["first_embedding"] = {name: first_embedding(name) for name in names}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
