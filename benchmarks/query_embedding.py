"""One query's embedding, torch against ONNX Runtime on one thread and on every core, and a
process's time to its first.

p50/p95 of `Embedder.encode([query])` over the queries of data/queries/*.jsonl, on a thread set
up as the search's query pool sets its threads up (`one_model_thread`: torch on one thread;
ONNX Runtime's query session: one intra-op thread; every core; every core spinning within a run;
whichever this home measured is reported, lectio.embedding.runtime_choice.query_session), each
timed in turn query by query, the order turned round from one query to the next, over
`--rounds` passes; p50/p95 of each query set too. Then, in a fresh process per backend:
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

from lectio.embedding import numerics, onnx_runtime, runtime_choice
from lectio.embedding.model import MODEL_NAME, Embedder, ModelChoice, one_model_thread, release_of
from lectio.evaluation.querysets import load_queries
from lectio.settings import PROJECT_ROOT

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


def query_sets() -> dict[str, list[str]]:
    return {path.stem: [q.query for q in load_queries(path)]
            for path in sorted((PROJECT_ROOT / "data" / "queries").glob("*.jsonl"))}


def onnx_embedder(query: tuple[int, bool]) -> Embedder:
    """The ONNX query embedder with this query session (threads, spinning), whatever this home measured."""
    embedder = Embedder(choice=replace(ModelChoice(), backend="onnx"))
    choice = embedder.choice
    embedder._onnx = onnx_runtime.loaded(choice.name, choice.release, choice.precision, query)
    return embedder


def percentiles(ms: np.ndarray) -> dict:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sets = query_sets()
    qs = [q for group in sets.values() for q in group]
    many = onnx_runtime.cores()
    embedders = {"torch": Embedder(choice=ModelChoice()), "onnx": onnx_embedder((1, False))}
    if many > 1:
        embedders[f"onnx_{many}_threads"] = onnx_embedder((many, False))
        embedders[f"onnx_{many}_threads_spinning"] = onnx_embedder((many, True))
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
            for i, q in enumerate(qs):  # query by query: a burst of other work falls on all alike
                turn = (i + round_) % len(names)
                for name in names[turn:] + names[:turn]:
                    latencies[name].append(pool.submit(one, name, q).result())
    report = {"cpu": f"{numerics.cpu_model()}, {onnx_runtime.cores()} cores", "queries": len(qs), "rounds": args.rounds}
    for name in names:
        ms = np.asarray(latencies[name]).reshape(args.rounds, len(qs)) * 1000
        report[name] = percentiles(ms.ravel()) | {"mean_ms": round(float(ms.mean()), 2)}
        start = 0
        for set_name, group in sets.items():
            report[name][set_name] = percentiles(ms[:, start:start + len(group)].ravel())
            start += len(group)
    report["p50_torch_over_onnx"] = round(report["torch"]["p50_ms"] / report["onnx"]["p50_ms"], 2)
    for name in names[2:]:  # paired query by query, so the machine's other work cancels out
        report[f"median_onnx_over_{name}"] = round(float(np.median(np.asarray(latencies["onnx"]) /
                                                                   np.asarray(latencies[name]))), 2)
    report["query_session_this_home_chose"] = runtime_choice.query_session(MODEL_NAME, release_of(MODEL_NAME))
    report["first_embedding"] = {name: first_embedding(name) for name in ("torch", "onnx")}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
