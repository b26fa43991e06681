"""Equivalence of the embedding backends: ONNX Runtime (fp32, and int8 where asked) against torch fp32.

Texts: the queries of data/queries/*.jsonl (each embedded alone, as a search embeds it: the
one-thread query path) and `--chunks` chunk texts of the default benchmark sample (WEB Romans,
Psalms 1-40 and John; embedded in batches as ingestion embeds them, long ones in lectio's
windows). Reported per backend against torch fp32: max |Δ| of any vector component, the cosine
of each pair of vectors (min, mean, 0.1 % quantile), and, for each query, whether its exact
top-100 chunks (by cosine over these chunks) are the same chunks in the same order. With
`--index VERSION`, also each query's HNSW top 100 on that version of the home's index (as the
search reads it, ef_search 400), with each backend's query vector.

    LECTIO_HOME=/tmp/bench python benchmarks/backend_equivalence.py [--chunks 2000] [--int8] [--index v1]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np

from lectio.embedding import numerics, onnx_runtime
from lectio.embedding.model import Embedder, ModelChoice, one_model_thread
from lectio.settings import PROJECT_ROOT, load_settings

from embedding_throughput import corpus


def queries() -> list[str]:
    return [json.loads(line)["query"] for path in sorted((PROJECT_ROOT / "data" / "queries").glob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def vectors(choice: ModelChoice, qs: list[str], chunks: list[str]) -> tuple[np.ndarray, np.ndarray, float]:
    from concurrent.futures import ThreadPoolExecutor

    embedder = Embedder(choice=choice)
    embedder.encode(chunks[:64])
    t0 = time.perf_counter()
    batch = embedder.encode(chunks)
    seconds = time.perf_counter() - t0
    # Queries one at a time on a thread set up as the search's query pool sets its threads up.
    with ThreadPoolExecutor(max_workers=1, initializer=one_model_thread) as pool:
        alone = np.vstack([pool.submit(embedder.encode, [q]).result() for q in qs])
    return alone, batch, seconds


def compare(q: np.ndarray, c: np.ndarray, ref_q: np.ndarray, ref_c: np.ndarray, k: int = 100) -> dict:
    both, ref = np.vstack([q, c]), np.vstack([ref_q, ref_c])
    cosine = np.sum(both * ref, axis=1)
    top = np.argsort(-(q @ c.T), axis=1, kind="stable")[:, :k]
    ref_top = np.argsort(-(ref_q @ ref_c.T), axis=1, kind="stable")[:, :k]
    same_order = float(np.mean([np.array_equal(a, b) for a, b in zip(top, ref_top)]))
    same_set = float(np.mean([set(a) == set(b) for a, b in zip(top, ref_top)]))
    overlap = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(top, ref_top)]))
    return {"max_abs_diff": float(np.abs(both - ref).max()),
            "max_abs_diff_queries": float(np.abs(q - ref_q).max()),
            "cosine_min": round(float(cosine.min()), 7), "cosine_mean": round(float(cosine.mean()), 7),
            "cosine_q0.001": round(float(np.quantile(cosine, 0.001)), 7),
            f"top{k}_identical_order": round(same_order, 4), f"top{k}_identical_set": round(same_set, 4),
            f"top{k}_overlap": round(overlap, 4)}


def hnsw_tops(version: str, qs: np.ndarray, k: int = 100) -> list[list[str]]:
    """Each query vector's HNSW top `k` on `version`, read as the owner."""
    from pgvector.psycopg import register_vector
    from psycopg import sql

    from lectio.index import versions
    from lectio.index.database import ensure_database

    with ensure_database(load_settings()).connect() as conn:
        register_vector(conn)
        table = sql.Identifier(versions.get_version(conn, version).table_name)
        conn.execute("SET hnsw.ef_search = 400")
        return [[chunk_id for (chunk_id,) in conn.execute(
            sql.SQL("SELECT chunk_id FROM {} ORDER BY embedding <=> %s LIMIT %s").format(table), (q, k),
            prepare=False).fetchall()] for q in qs]


def same_tops(tops: list[list[str]], ref: list[list[str]]) -> dict:
    return {"hnsw_top100_identical_set": round(float(np.mean([set(a) == set(b) for a, b in zip(tops, ref)])), 4),
            "hnsw_top100_identical_order": round(float(np.mean([a == b for a, b in zip(tops, ref)])), 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--select", default="Romans; Psalms 1-40; John")
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--int8", action="store_true", help="ONNX Runtime's int8 too (opt-in precision)")
    parser.add_argument("--index", help="a version of the home's index: compare HNSW top-100s on it too")
    args = parser.parse_args()
    texts = corpus(args.select, load_settings())["text"].tolist()
    step = max(1, len(texts) // args.chunks)
    chunks, qs = texts[::step][:args.chunks], queries()
    torch_fp32 = ModelChoice()
    choices = {"onnx_fp32": replace(torch_fp32, backend="onnx")}
    if args.int8:
        choices["onnx_int8"] = replace(torch_fp32, backend="onnx", precision="int8")
    ref_q, ref_c, ref_s = vectors(torch_fp32, qs, chunks)
    report = {"cpu": f"{numerics.cpu_model()}, {onnx_runtime.cores()} cores", "queries": len(qs),
              "chunks": len(chunks), "reference": torch_fp32.id,
              "batch_seconds": {"torch_fp32": round(ref_s, 2)}}
    for name, choice in choices.items():
        q, c, s = vectors(choice, qs, chunks)
        report["batch_seconds"][name] = round(s, 2)
        report[name] = {"model_id": choice.id, **compare(q, c, ref_q, ref_c)}
        if args.index:
            report[name].update(same_tops(hnsw_tops(args.index, q), hnsw_tops(args.index, ref_q)))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
