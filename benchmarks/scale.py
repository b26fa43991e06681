"""How lectio grows: index build, disk, mirror, search and a no-change run against rows.

Synthetic chunk tables drawn from a real index version (by default the live one of the default
home, read as the owner and never written): copy 0 is the real chunks as they are; copy c ≥ 1 is
every real chunk again with its vector moved by gaussian noise (sigma per dimension, --sigma) and
renormalised, and its ids relabelled so they are unique (chunk, parent and source ids get `~c<c>`,
the content hash is hashed again, a verse ref's chapter moves by 1000 × c). Texts, kinds, ACLs,
translations and metadata are the real ones, so the mix of kinds and ACLs is the corpus's. A size
below the corpus's is a seeded sample of copy 0; the last copy of a larger one is a seeded sample.

Each size is built in LECTIO_HOME (never the source home) as a real index version, through
lectio.index.build.build_index as a run builds one: the perturbed vectors go into the embedding
cache first, as the embedding step would leave them. Measured per size:
- the HNSW index build (its time and the peak memory of the building processes, PSS, from
  pg_stat_progress_create_index and /proc), with maintenance_work_mem and
  max_parallel_maintenance_workers as given; the whole version build;
- the version's tables and indexes on disk (the HNSW index alone too);
- the lexical mirror's build (time, peak memory of this process above what it held before) and
  files; its resident memory in a fresh search process: after loading it, after the searches;
- hybrid search p50/p95 at k=20 (lectio.retrieval.search as the service runs it, the
  vector side on a second connection) for a public caller and a private one, beside the same
  searches on the baseline version (the corpus's own size) in the same process, query by query;
- HNSW recall@20 against an exact scan at the configured ef_search (search_latency.top_ids);
- the index step of a no-change run: build_index handed the same chunks again finds the version.

    LECTIO_HOME=/work/tmp-scale nice -n 10 python benchmarks/scale.py --rows 133567,100000,300000
    LECTIO_HOME=/work/tmp-scale nice -n 10 python benchmarks/scale.py --rows 1000000
    LECTIO_HOME=/work/tmp-scale nice -n 10 python benchmarks/scale.py --rows 1000000 --search-only
    python benchmarks/scale.py --plot      # docs/scale/*.png and the fitted curves from results.json

Results merge into docs/scale/results.json by size, so sizes can be run apart; --search-only
measures a change to search on the versions already built (their build figures stay).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from lectio.embedding.cache import cached_hashes, store_embeddings
from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import load_queries
from lectio.index import mirror, schema, tables, versions
from lectio.index.build import build_index
from lectio.index.database import ensure_database, open_database
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.settings import PROJECT_ROOT, load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search_latency import is_reference, percentile, stages, top_ids  # noqa: E402

OUT = PROJECT_ROOT / "docs" / "scale"
BASELINE_ROWS = 133_567  # the default corpus: the size every figure so far is for
PRIVATE = ("public", "group:staff", "user:alice")  # a caller with the corpus's private principals
_REF = re.compile(r"(.+)_(\d+)_(\d+)")


def read_source(home: Path, cache: Path) -> tuple[pd.DataFrame, np.ndarray, str]:
    """The source home's live chunks, their vectors and model, read once as the owner and kept
    in `cache` (the source home is only read)."""
    if not (cache / "source.pkl").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with open_database(home).connect() as conn:
            info = versions.get_version(conn)
            frame = versions.version_chunks(conn, info.version)
            rows = conn.execute(f'SELECT embedding FROM "{info.table_name}" ORDER BY chunk_id').fetchall()
        np.save(cache / "source-vectors.npy", np.stack([row[0].to_numpy() for row in rows]).astype(np.float32))
        (cache / "source-model").write_text(info.model_id)
        frame.to_pickle(cache / "source.pkl")
    return (pd.read_pickle(cache / "source.pkl"), np.load(cache / "source-vectors.npy"),
            (cache / "source-model").read_text())


def synthesize(source: pd.DataFrame, vectors: np.ndarray, rows: int, sigma: float) -> tuple[pd.DataFrame, np.ndarray]:
    """`rows` chunks made as the module docstring says; the same (copy, row) always gets the same
    vector, so the embedding cache holds one vector per content hash across sizes."""
    n = len(source)
    frames, parts = [], []
    for copy in range(-(-rows // n)):
        take = min(n, rows - copy * n)
        pick = np.arange(n) if take == n else np.sort(np.random.default_rng(10_000 + copy).choice(n, take, replace=False))
        moved = vectors if copy == 0 else _perturbed(vectors, sigma, copy)
        parts.append(moved[pick])
        frames.append(_relabelled(source.iloc[pick], copy))
    return pd.concat(frames, ignore_index=True), np.concatenate(parts)


def _perturbed(vectors: np.ndarray, sigma: float, copy: int) -> np.ndarray:
    noisy = vectors + np.random.default_rng(copy).standard_normal(vectors.shape, dtype=np.float32) * np.float32(sigma)
    return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def _relabelled(frame: pd.DataFrame, copy: int) -> pd.DataFrame:
    if copy == 0:
        return frame.copy()
    tag = f"~c{copy}"
    out = frame.copy()
    for column in ("chunk_id", "source_id"):
        out[column] = out[column] + tag
    out["parent_id"] = out["parent_id"].map(lambda p: p + tag if isinstance(p, str) else p)
    out["content_hash"] = [hashlib.sha256((h + tag).encode()).hexdigest() for h in out["content_hash"]]
    out["refs"] = out["refs"].map(lambda refs: [_moved_ref(r, copy) for r in refs or ()])
    out["chapter"] = out["chapter"].map(lambda c: c + 1000 * copy if pd.notna(c) else c)
    return out


def _moved_ref(ref: str, copy: int) -> str:
    found = _REF.fullmatch(ref)
    return f"{found[1]}_{int(found[2]) + 1000 * copy}_{found[3]}" if found else ref + f"~c{copy}"


def cache_vectors(conn, chunks: pd.DataFrame, vectors: np.ndarray, model_id: str) -> int:
    """Put the vectors the cache lacks into it, as the embedding step leaves them."""
    have = cached_hashes(conn, chunks["content_hash"], model_id)
    missing = np.flatnonzero(~chunks["content_hash"].isin(have).to_numpy())
    for start in range(0, len(missing), 50_000):
        batch = missing[start:start + 50_000]
        store_embeddings(conn, chunks["content_hash"].to_numpy()[batch].tolist(), vectors[batch], model_id)
    return len(missing)


class BuildWatch(threading.Thread):
    """Samples, twice a second on its own connection, whether the build backend is creating the
    HNSW index and the memory (PSS, summed) of that backend and its parallel workers."""

    def __init__(self, database, pid: int):
        super().__init__(daemon=True)
        self.database, self.pid, self.samples, self.stop = database, pid, [], threading.Event()

    def run(self) -> None:
        with self.database.connect() as conn:
            while not self.stop.is_set():
                # A plain CREATE INDEX reports no index relid in its progress: its statement tells.
                statement = conn.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (self.pid,)).fetchone()
                pids = [p for (p,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE pid = %s OR leader_pid = %s",
                                                   (self.pid, self.pid)).fetchall()]
                hnsw = bool(statement and "using hnsw" in (statement[0] or "").lower())
                self.samples.append((time.monotonic(), hnsw, _pss(pids), len(pids)))
                self.stop.wait(0.5)

    def hnsw(self) -> dict:
        """Time and peak memory of the HNSW index build (lectio.index.indexes.create)."""
        named = [s for s in self.samples if s[1]]
        if not named:
            return {}
        return {"hnsw_build_seconds": round(named[-1][0] - named[0][0] + 0.5, 1),
                "hnsw_peak_memory_mb": round(max(s[2] for s in named) / 2**20),
                "hnsw_build_processes": max(s[3] for s in named),
                "build_peak_memory_mb": round(max(s[2] for s in self.samples) / 2**20)}


def _pss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_full_info().pss
        except psutil.Error:
            pass
    return total


class PeakRss(threading.Thread):
    """The peak resident memory of this process while it runs, sampled every 0.2 s."""

    def __init__(self):
        super().__init__(daemon=True)
        self.base = psutil.Process().memory_info().rss
        self.peak, self.stop = self.base, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.peak = max(self.peak, psutil.Process().memory_info().rss)


def build_size(database, source, vectors, model_id: str, rows: int, args) -> tuple[dict, versions.IndexVersion]:
    chunks, moved = synthesize(source, vectors, rows, args.sigma)
    with database.connect() as conn:
        schema.ensure_schema(conn)
        for old in versions.list_versions(conn):  # a size built before is built again
            if old.rows == rows and old.status == "ready":
                versions.drop_version(conn, old.version)
        started = time.monotonic()
        cached = cache_vectors(conn, chunks, moved, model_id)
        result = {"rows": rows, "vectors_cached": cached, "cache_seconds": round(time.monotonic() - started, 1),
                  "maintenance_work_mem": args.maintenance_work_mem,
                  "max_parallel_maintenance_workers": args.workers,
                  "mean_cosine_to_real": _mean_cosine(chunks, moved, source, vectors)}
        conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(args.workers)}")
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        watch = BuildWatch(database, conn.info.backend_pid)
        watch.start()
        started = time.monotonic()
        outcome = build_index(conn, chunks, model_id, [], switch_live=False)
        result["version_build_seconds"] = round(time.monotonic() - started, 1)
        watch.stop.set()
        watch.join()
        result |= watch.hnsw() | {"build_notices": sorted(set(notices))[:5], "version": outcome.version}
        started = time.monotonic()
        again = build_index(conn, chunks, model_id, [], switch_live=False)
        result["nochange_index_step_seconds"] = round(time.monotonic() - started, 1)
        assert again.reused_existing and again.version == outcome.version, again
        info = versions.get_version(conn, outcome.version)
        result |= disk(conn, info.table_name)
        del chunks, moved
        gc.collect()
        result |= build_mirror(conn, info)
    return result, info


def _mean_cosine(chunks, moved, source, vectors) -> float:
    """How far the perturbed copies lie from their real chunk (1.0 when there are none)."""
    real = dict(zip(source["chunk_id"], range(len(source))))
    copies = [i for i, cid in enumerate(chunks["chunk_id"]) if "~c" in cid][:5000]
    if not copies:
        return 1.0
    originals = [real[chunks["chunk_id"].iat[i].rsplit("~c", 1)[0]] for i in copies]
    return round(float(np.mean(np.sum(moved[copies] * vectors[originals], axis=1))), 4)


def disk(conn, table: str) -> dict:
    """The version's chunk table (heap and TOAST), its indexes, the HNSW index alone, and every
    table the version owns with their indexes."""
    one = lambda query, *params: conn.execute(query, params).fetchone()[0]  # noqa: E731
    owned = tables.version_tables(conn, table)
    return {
        "table_mb": round(one("SELECT pg_table_size(%s::regclass)", table) / 2**20),
        "table_indexes_mb": round(one("SELECT pg_indexes_size(%s::regclass)", table) / 2**20),
        "hnsw_index_mb": round(one("SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i JOIN pg_class c ON "
                                   "c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = "
                                   "%s::regclass AND a.amname = 'hnsw'", table) / 2**20),
        "version_total_mb": round(sum(one("SELECT pg_total_relation_size(%s::regclass)", t) for t in owned) / 2**20),
    }


def build_mirror(conn, info) -> dict:
    home = load_settings().home
    mirror.remove(home, info.version)
    watch = PeakRss()
    watch.start()
    started = time.monotonic()
    path = mirror.build(conn, info, home)
    seconds = time.monotonic() - started
    watch.stop.set()
    watch.join()
    files = sum(f.stat().st_size for f in path.iterdir())
    return {"mirror_build_seconds": round(seconds, 1), "mirror_build_peak_extra_mb": round((watch.peak - watch.base) / 2**20),
            "mirror_files_mb": round(files / 2**20)}


def search_run(version: str, baseline: str | None, args) -> dict:
    """In a fresh process: the mirror's resident memory, then latency beside the baseline and
    recall. Every search as the service runs it."""
    database = ensure_database(load_settings())
    home = load_settings().home
    queries = [q.query for q in load_queries(args.queries) if not is_reference(q.query)]
    with database.connect() as conn, database.connect() as side:
        info = versions.get_version(conn, version)
        embedder = Embedder.for_queries_of(info.model_id)
        vectors = embedder.encode(queries)
        gc.collect()
        before = psutil.Process().memory_full_info()
        loaded = mirror.load(info, home)
        after_load = psutil.Process().memory_full_info()
        targets = [info.version] + ([baseline] if baseline and baseline != info.version else [])
        callers = {"public": ("public",), "private": PRIVATE}
        times = {(v, c): [] for v in targets for c in callers}
        for v in targets:
            search(conn, SearchRequest(queries[0], k=args.k, version=v), embedder=embedder, vector_conn=side)  # warm
        for position, query in enumerate(queries):
            order = [(v, c) for v in targets for c in callers]
            turn = position % len(order)  # who goes first (and reads pages from disk) changes each query
            for v, c in order[turn:] + order[:turn]:
                started = time.perf_counter()
                search(conn, SearchRequest(query, k=args.k, version=v, principals=callers[c]), embedder=embedder,
                       vector_conn=side)
                times[(v, c)].append(time.perf_counter() - started)
        after_search = psutil.Process().memory_full_info()
        # What each stage of a public hybrid search costs at this size and at the baseline's: what
        # grows with the rows.
        parts = {v: stages(conn, versions.get_version(conn, v), mirror.load(versions.get_version(conn, v), home),
                           queries[: args.recall_queries], embedder, SearchConfig()) for v in targets}
        ef = SearchConfig().vector.ef_search
        recalls = []
        for vector in vectors[: args.recall_queries]:
            approx, _ = top_ids(conn, info.table_name, vector, args.k, False, ef)
            exact, _ = top_ids(conn, info.table_name, vector, args.k, True, ef)
            recalls.append(len(set(approx) & set(exact)) / max(1, len(exact)))
    mb = lambda a, b, field: round((getattr(a, field) - getattr(b, field)) / 2**20)  # noqa: E731
    result = {"queries": len(queries), "k": args.k, "ef_search": ef, "mirror_loaded": loaded is not None,
              "mirror_resident_after_load_mb": mb(after_load, before, "rss"),
              "mirror_resident_after_searches_mb": mb(after_search, before, "rss"),
              "process_rss_after_searches_mb": round(after_search.rss / 2**20),
              "hnsw_recall_at_k": round(statistics.mean(recalls), 4), "hnsw_recall_min": round(min(recalls), 4),
              "recall_queries": len(recalls)}
    for (v, c), values in times.items():
        prefix = "" if v == info.version else "baseline_"
        result |= {f"{prefix}{c}_p50_ms": round(1000 * percentile(values, 50), 1),
                   f"{prefix}{c}_p95_ms": round(1000 * percentile(values, 95), 1)}
    if len(targets) > 1:
        for c in callers:
            result[f"{c}_p95_over_baseline"] = round(result[f"{c}_p95_ms"] / result[f"baseline_{c}_p95_ms"], 2)
            result[f"{c}_p50_over_baseline"] = round(result[f"{c}_p50_ms"] / result[f"baseline_{c}_p50_ms"], 2)
    result["baseline_version"] = baseline
    result["stages_ms"] = parts[info.version]
    if len(targets) > 1:
        result["baseline_stages_ms"] = parts[baseline]
    return result


def ready_version(database, rows: int) -> str | None:
    """The newest ready version of `rows` rows in the home, or None."""
    with database.connect() as conn:
        found = [v for v in versions.list_versions(conn) if v.rows == rows and v.status == "ready"]
    return found[-1].version if found else None


def merge(result: dict, out: Path) -> None:
    path = out / "results.json"
    out.mkdir(parents=True, exist_ok=True)
    found = json.loads(path.read_text()) if path.is_file() else {}
    found[str(result["rows"])] = result
    path.write_text(json.dumps(dict(sorted(found.items(), key=lambda kv: int(kv[0]))), indent=2) + "\n")


def run_sizes(args) -> None:
    home = load_settings().home
    if home.resolve() == args.source_home.resolve():
        sys.exit(f"LECTIO_HOME is the source home {home}: set LECTIO_HOME to a home of its own")
    source, vectors, model_id = read_source(args.source_home, home / "scale-source")
    database = ensure_database(load_settings())
    for rows in args.rows:
        print(f"[scale] {rows:,} rows: building", flush=True)
        result, info = build_size(database, source, vectors, model_id, rows, args)
        result["cpu"] = _cpu()
        print(json.dumps(result), flush=True)
        result |= searched(info.version, ready_version(database, args.baseline_rows), args)
        result["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(json.dumps(result), flush=True)
        merge(result, args.out)


def search_sizes(args) -> None:
    """Search the versions of the sizes asked for that the home has built already, beside the
    baseline, and put the new search figures in their results (the build figures stay): a change
    to search measured without building again."""
    database = ensure_database(load_settings())
    path = args.out / "results.json"
    found = json.loads(path.read_text()) if path.is_file() else {}
    for rows in args.rows:
        version = ready_version(database, rows)
        if version is None or str(rows) not in found:
            sys.exit(f"--search-only: {rows:,} rows has no ready version in {load_settings().home} "
                     f"or no results in {path}: build it first")
        print(f"[scale] {rows:,} rows: searching {version}", flush=True)
        result = found[str(rows)] | searched(version, ready_version(database, args.baseline_rows), args)
        result["searched_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(json.dumps(result), flush=True)
        merge(result, args.out)


def searched(version: str, baseline: str | None, args) -> dict:
    """search_run in a fresh process, so the mirror's resident memory is its own."""
    child = subprocess.run([sys.executable, __file__, "--search-version", version, "--baseline", baseline or "",
                            "--queries", args.queries, "--k", str(args.k), "--recall-queries", str(args.recall_queries)],
                           capture_output=True, text=True, check=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} × {os.cpu_count()}"
    return "unknown"


# One PNG per figure: (file, title, y label, {result key: line label}).
FIGURES = [
    ("build_time", "Build time", "seconds", {"hnsw_build_seconds": "HNSW index", "version_build_seconds":
                                             "whole version (load, indexes, companions)",
                                             "mirror_build_seconds": "lexical mirror"}),
    ("build_memory", "Peak memory while building", "MB", {"hnsw_peak_memory_mb": "HNSW build (PostgreSQL, PSS)",
                                                          "mirror_build_peak_extra_mb": "mirror build (Python)"}),
    ("disk", "On disk", "MB", {"table_mb": "chunk table", "hnsw_index_mb": "HNSW index",
                               "version_total_mb": "version: every table and index", "mirror_files_mb": "mirror files"}),
    ("mirror_memory", "Mirror resident memory in a search process", "MB",
     {"mirror_resident_after_load_mb": "after loading", "mirror_resident_after_searches_mb": "after the searches"}),
    ("search_latency", "Hybrid search at k=20", "ms", {"public_p50_ms": "public p50", "public_p95_ms": "public p95",
                                                       "private_p50_ms": "private p50", "private_p95_ms": "private p95"}),
    ("recall", "HNSW recall@20 against exact search", "recall", {"hnsw_recall_at_k": "mean", "hnsw_recall_min": "worst query"}),
    ("nochange", "Index step of a no-change run", "seconds", {"nochange_index_step_seconds": "build_index finds the version"}),
    ("search_ratio", "Hybrid search p95 ÷ the 133,567-row version's, same run", "ratio (the bar: ≤ 2 at 1M rows)",
     {"public_p95_over_baseline": "public", "private_p95_over_baseline": "private"}),
]
EXTRAPOLATED = (1_000_000, 3_000_000, 10_000_000)
# Milliseconds from runs apart move with the machine's load more than with rows: they are plotted,
# and only their ratio to the baseline measured in the same run is fitted.
UNFITTED = {"public_p50_ms", "public_p95_ms", "private_p50_ms", "private_p95_ms", "hnsw_recall_min"}


def fit(rows: list[int], values: list[float]) -> tuple[float, float] | None:
    """y = a · rows^b by least squares in log-log over the sizes given; None with under two."""
    points = [(r, v) for r, v in zip(rows, values) if v and v > 0]
    if len(points) < 2:
        return None
    b, log_a = np.polyfit(np.log([r for r, _ in points]), np.log([v for _, v in points]), 1)
    return float(np.exp(log_a)), float(b)


def _value(result: dict, key: str):
    """A result's figure; the baseline's ratio to itself is 1."""
    if key.endswith("_over_baseline") and result["rows"] == BASELINE_ROWS:
        return result.get(key, 1.0)
    return result.get(key)


def plot_all(out: Path) -> None:
    """A PNG per figure from results.json, each measured line with its fitted power law carried to
    the extrapolated sizes (dashed, hollow points), and fits.json with the fits and their values."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads((out / "results.json").read_text())
    sizes = sorted(int(r) for r in results)
    fits = {}
    for name, title, unit, lines in FIGURES:
        figure, axes = plt.subplots(figsize=(7, 4.5))
        for key, label in lines.items():
            measured = [(r, _value(results[str(r)], key)) for r in sizes if _value(results[str(r)], key) is not None]
            if not measured:
                continue
            line, = axes.plot(*zip(*measured), "o-", label=label)
            found = fit([r for r, _ in measured if r >= 100_000], [v for r, v in measured if r >= 100_000])
            if found and key not in UNFITTED:
                a, b = found
                ahead = [measured[-1][0], *(r for r in EXTRAPOLATED if r > measured[-1][0])]
                axes.plot(ahead, [a * r ** b for r in ahead], "--", mfc="none", marker="o", color=line.get_color())
                fits[key] = {"a": a, "exponent": round(b, 3),
                             **{f"at_{r}": round(a * r ** b, 4 if "recall" in key else 2) for r in EXTRAPOLATED}}
        if name == "search_ratio":
            axes.axhline(2.0, color="grey", linestyle=":")
        axes.set_xscale("log")
        if name not in ("recall", "search_ratio"):
            axes.set_yscale("log")
        axes.set_xlabel("rows (dashed: fitted power law, extrapolated)")
        axes.set_ylabel(unit)
        axes.set_title(title)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(out / f"{name}.png", dpi=110)
        plt.close(figure)
    (out / "fits.json").write_text(json.dumps(fits, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=lambda v: [int(x) for x in v.split(",") if x], default=[BASELINE_ROWS])
    parser.add_argument("--source-home", type=Path, default=PROJECT_ROOT / ".lectio",
                        help="home whose live version the chunks are drawn from (only read)")
    parser.add_argument("--baseline-rows", type=int, default=BASELINE_ROWS,
                        help="the size every other is searched beside (build it first)")
    parser.add_argument("--sigma", type=float, default=0.02, help="gaussian noise per vector dimension")
    parser.add_argument("--maintenance-work-mem", default="3GB", help="for the HNSW build (the graph's memory)")
    parser.add_argument("--workers", type=int, default=1, help="max_parallel_maintenance_workers for the build")
    parser.add_argument("--queries", default=str(PROJECT_ROOT / "data" / "queries" / "theology.jsonl"))
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--recall-queries", type=int, default=40, help="queries whose HNSW top k is checked exactly")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--search-version", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", help=argparse.SUPPRESS)
    parser.add_argument("--plot", action="store_true", help="plot docs/scale/results.json; build nothing")
    parser.add_argument("--search-only", action="store_true",
                        help="search the sizes' versions already built in LECTIO_HOME again; build nothing")
    args = parser.parse_args()
    if args.search_version:
        print(json.dumps(search_run(args.search_version, args.baseline or None, args)))
    elif args.plot:
        plot_all(args.out)
    elif args.search_only:
        search_sizes(args)
    else:
        run_sizes(args)


if __name__ == "__main__":
    main()
