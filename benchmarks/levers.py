"""Issue 39's levers, measured on the scale benchmark's versions (benchmarks/scale.py) in place.

halfvec: an expression HNSW index over `embedding::halfvec(<dims>)` (halfvec_cosine_ops, lectio's
m and ef_construction, scale.py's maintenance_work_mem and one parallel worker) built beside the
version's own fp32 index under a scratch name, and dropped at the end: both indexes' size on disk
and build time (the fp32 one from docs/scale/results.json, or rebuilt under a scratch name in the
same run with --rebuild-fp32), recall@20 of each against an exact fp32 scan at ef_search 200, and
the HNSW step of a public search (100 candidates, lectio.retrieval.vector.vector_candidates'
statement) through each index, alternating query by query.

ef_search by shape: on each version given, recall@20 against an exact scan and the HNSW step's
p50/p95 at each ef_search, for short queries (topics of four words or fewer), long passages and
theology sentences; the versions and ef_search values alternate query by query.

    LECTIO_HOME=/work/tmp-scale nice -n 19 python benchmarks/levers.py halfvec --version v6 --rebuild-fp32 --queries 80
    LECTIO_HOME=/work/tmp-scale nice -n 19 python benchmarks/levers.py halfvec --version v5 --queries 80
    LECTIO_HOME=/work/tmp-scale nice -n 19 python benchmarks/levers.py ef --versions v4,v7 --queries 40
    LECTIO_HOME=/work/tmp-scale nice -n 19 python benchmarks/levers.py ef --versions v4,v7 --queries 40 \
        --shapes short --efs 200,400,1000
    LECTIO_HOME=/work/tmp-scale python benchmarks/levers.py drop --version v5   # scratch left by a crash

The server's backends serving this script (and a build's parallel worker) are reniced to 19, and
its queries run without parallel workers: the embedded server may have been started by someone
else at normal priority, and the postmaster forks workers at its own. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
from psycopg import sql

from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import load_queries
from lectio.index import security, versions
from lectio.index.database import ensure_database
from lectio.index.indexes import HNSW_EF_CONSTRUCTION, HNSW_M
from lectio.retrieval.vector import vector_candidates
from lectio.retrieval import DEFAULT_PRINCIPALS, DEFAULT_TRANSLATION, SearchConfig
from lectio.settings import PROJECT_ROOT, load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import OUT, BuildWatch  # noqa: E402
from search_latency import is_reference, percentile, public_scope, top_ids  # noqa: E402

SCRATCH = "levers_scratch_"  # every index this script creates starts so, and is dropped by it
QUERIES = PROJECT_ROOT / "data" / "queries"
SHAPES = {"short": (QUERIES / "naves.jsonl", 4), "long": (QUERIES / "long_passages.jsonl", None),
          "sentence": (QUERIES / "theology.jsonl", None)}


class Renice(threading.Thread):
    """Keeps this connection's backend and its parallel workers at nice 19 while it runs, and
    adds up the CPU time they spend: on a shared machine the wall time says as much about the
    others' load as about the build."""

    def __init__(self, database, pid: int):
        super().__init__(daemon=True)
        self.database, self.pid, self.stop = database, pid, threading.Event()
        self.start_cpu, self.cpu = _cpu_seconds(pid), {}

    def run(self) -> None:
        with self.database.connect() as conn:
            renice([self.pid, conn.info.backend_pid])
            while not self.stop.wait(0.5):
                workers = [p for (p,) in conn.execute("SELECT pid FROM pg_stat_activity WHERE leader_pid = %s",
                                                      (self.pid,)).fetchall()]
                renice(workers)
                # A worker's last sample stands for it once it has exited (at most 0.5 s short).
                self.cpu |= {pid: seconds for pid in workers if (seconds := _cpu_seconds(pid)) is not None}

    def cpu_seconds(self) -> float:
        return round(_cpu_seconds(self.pid) - self.start_cpu + sum(self.cpu.values()), 1)


def _cpu_seconds(pid: int) -> float | None:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def renice(pids: list[int]) -> None:
    for pid in pids:
        try:
            psutil.Process(pid).nice(19)
        except psutil.Error:
            pass


def connect(database):
    conn = database.connect()
    renice([conn.info.backend_pid])
    # The exact scans' parallel workers would be forked by the postmaster at its own priority.
    conn.execute("SET max_parallel_workers_per_gather = 0")
    return conn


def queries_of(shape: str, limit: int) -> list[str]:
    path, most_words = SHAPES[shape]
    texts = [q.query for q in load_queries(path) if not is_reference(q.query)]
    return [t for t in texts if most_words is None or len(t.split()) <= most_words][:limit]


def halfvec_expression(dims: int) -> sql.Composable:
    return sql.SQL("(embedding::halfvec({}))").format(sql.Literal(dims))


def halfvec_top_ids(conn, table: str, vector, k: int, ef: int) -> list[str]:
    """search_latency.top_ids through the halfvec index: the same filter, the cast vectors' order."""
    expression = halfvec_expression(len(vector))
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
        rows = conn.execute(
            sql.SQL("SELECT chunk_id FROM {} WHERE acl && %s ORDER BY {} <=> %s::halfvec({}) LIMIT %s").format(
                sql.Identifier(table), expression, sql.Literal(len(vector))),
            [["public"], vector, k], prepare=False).fetchall()
    return [r[0] for r in rows]


def halfvec_candidates(conn, table: str, vector, where, params, config: SearchConfig):
    """vector_candidates' statement, ordered by the halfvec expression so its index serves it."""
    expression, cast = halfvec_expression(len(vector)), sql.SQL("%(v)s::halfvec({})").format(sql.Literal(len(vector)))
    ef_search = min(max(config.vector.ef_search, config.candidates), 1000)
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)",
                     (str(ef_search),))
        return conn.execute(
            sql.SQL("SELECT chunk_id, {e} <=> {c} AS distance FROM {t} WHERE {w} ORDER BY {e} <=> {c} LIMIT %(limit)s").format(
                e=expression, c=cast, t=sql.Identifier(table), w=where),
            {"v": vector, **params, "limit": config.candidates}, prepare=False).fetchall()


def step(conn, version, vector, config: SearchConfig, halfvec: bool) -> float:
    """Seconds the HNSW step of a public search takes, as the reader (row-level security on)."""
    scope = public_scope(version)
    where, params = scope.where(DEFAULT_TRANSLATION)
    candidates = halfvec_candidates if halfvec else vector_candidates
    with conn.transaction():
        security.act_as_reader(conn, DEFAULT_PRINCIPALS)
        started = time.perf_counter()
        candidates(conn, version.table_name, vector, where, params, config)
        return time.perf_counter() - started


def plan_uses(conn, version, vector, index: str) -> bool:
    """Whether the halfvec step's plan reads `index` (not an exact scan of the cast vectors)."""
    scope = public_scope(version)
    where, params = scope.where(DEFAULT_TRANSLATION)
    expression = halfvec_expression(len(vector))
    cast = sql.SQL("%(v)s::halfvec({})").format(sql.Literal(len(vector)))
    with conn.transaction():
        security.act_as_reader(conn, DEFAULT_PRINCIPALS)
        plan = conn.execute(sql.SQL("EXPLAIN SELECT chunk_id FROM {t} WHERE {w} ORDER BY {e} <=> {c} LIMIT 100").format(
            t=sql.Identifier(version.table_name), w=where, e=expression, c=cast), {"v": vector, **params},
            prepare=False).fetchall()
    return any(index in line for (line,) in plan)


def indexes_of(conn, table: str) -> list[str]:
    return [name for (name,) in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY indexname", (table,)).fetchall()]


def hnsw_size_mb(conn, index: str) -> float:
    return round(conn.execute("SELECT pg_relation_size(%s::regclass)", (index,)).fetchone()[0] / 2**20, 1)


def own_hnsw_index(conn, table: str) -> str:
    return conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.indrelid = %s::regclass AND a.amname = 'hnsw' AND c.relname NOT LIKE %s",
        (table, SCRATCH + "%")).fetchone()[0]


def build(database, conn, table: str, name: str, column: sql.Composable, ops: str, args) -> dict:
    """CREATE INDEX `name` as lectio builds its HNSW index, with scale.py's build settings: time,
    peak memory (scale.BuildWatch) and size."""
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(args.maintenance_work_mem)))
    conn.execute(sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(args.workers)))
    watch, nice = BuildWatch(database, conn.info.backend_pid), Renice(database, conn.info.backend_pid)
    watch.start()
    nice.start()
    started = time.monotonic()
    conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw ({} {}) WITH (m = {}, ef_construction = {})").format(
        sql.Identifier(name), sql.Identifier(table), column, sql.SQL(ops), sql.Literal(HNSW_M),
        sql.Literal(HNSW_EF_CONSTRUCTION)))
    seconds = time.monotonic() - started
    for thread in (watch, nice):
        thread.stop.set()
        thread.join()
    return {"build_seconds": round(seconds, 1), "build_cpu_seconds": nice.cpu_seconds(),
            "build_peak_memory_mb": watch.hnsw().get("hnsw_peak_memory_mb"),
            "index_mb": hnsw_size_mb(conn, name)}


def drop_scratch(conn, table: str) -> list[str]:
    dropped = [name for name in indexes_of(conn, table) if name.startswith(SCRATCH)]
    for name in dropped:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    return dropped


def halfvec(args) -> dict:
    database = ensure_database(load_settings())
    with connect(database) as conn:
        info = versions.get_version(conn, args.version)
        table, before = info.table_name, indexes_of(conn, info.table_name)
        own = own_hnsw_index(conn, table)
        queries = queries_of("sentence", args.queries)
        vectors = Embedder.for_queries_of(info.model_id).encode(queries)
        dims, name = len(vectors[0]), SCRATCH + "halfvec_hnsw"
        recorded = json.loads((OUT / "results.json").read_text()).get(str(info.rows), {})
        result = {"version": info.version, "rows": info.rows, "queries": len(queries), "k": args.k, "ef_search": args.ef,
                  "fp32": {"index_mb": hnsw_size_mb(conn, own), "build_seconds_recorded": recorded.get("hnsw_build_seconds"),
                           "build_peak_memory_mb_recorded": recorded.get("hnsw_peak_memory_mb")}}
        try:
            if args.rebuild_fp32:
                rebuilt = build(database, conn, table, SCRATCH + "fp32_hnsw", sql.SQL("embedding"), "vector_cosine_ops", args)
                result["fp32"] |= {"rebuilt_" + key: value for key, value in rebuilt.items()}
                conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(SCRATCH + "fp32_hnsw")))
            result["halfvec"] = build(database, conn, table, name, halfvec_expression(dims), "halfvec_cosine_ops", args)
            result["halfvec"]["plan_uses_index"] = plan_uses(conn, info, vectors[0], name)
            result |= compare(conn, info, vectors, args)
        finally:
            result["dropped"] = drop_scratch(conn, table)
            result["indexes_as_before"] = indexes_of(conn, table) == before
    for key in ("index_mb", "build_seconds", "build_cpu_seconds"):
        fp32 = result["fp32"].get("rebuilt_" + key) or result["fp32"].get(key) or result["fp32"].get(key + "_recorded")
        if fp32 and key in result.get("halfvec", {}):
            result[f"halfvec_over_fp32_{key}"] = round(result["halfvec"][key] / fp32, 3)
    return result


def compare(conn, info, vectors, args) -> dict:
    """Recall@k of each index against the exact fp32 scan, and the HNSW step through each,
    alternating which goes first query by query."""
    config = SearchConfig().but(ef_search=args.ef)
    recall = {"fp32": [], "halfvec": []}
    times = {"fp32": [], "halfvec": []}
    for halfvec_index in (False, True):  # warm both
        step(conn, info, vectors[0], config, halfvec_index)
    for position, vector in enumerate(vectors):
        exact = set(top_ids(conn, info.table_name, vector, args.k, True, args.ef)[0])
        found = {"fp32": top_ids(conn, info.table_name, vector, args.k, False, args.ef)[0],
                 "halfvec": halfvec_top_ids(conn, info.table_name, vector, args.k, args.ef)}
        for kind, ids in found.items():
            recall[kind].append(len(exact & set(ids)) / max(1, len(exact)))
        for kind in (("fp32", "halfvec") if position % 2 == 0 else ("halfvec", "fp32")):
            times[kind].append(step(conn, info, vector, config, kind == "halfvec"))
    return {f"{kind}_step": summary(times[kind], recall[kind]) for kind in times}


def summary(times: list[float], recalls: list[float]) -> dict:
    return {"recall_at_k": round(statistics.mean(recalls), 4), "recall_min": round(min(recalls), 4),
            "p50_ms": round(1000 * percentile(times, 50), 1), "p95_ms": round(1000 * percentile(times, 95), 1)}


def ef_by_shape(args) -> dict:
    database = ensure_database(load_settings())
    with connect(database) as conn:
        infos = [versions.get_version(conn, v) for v in args.versions]
        embedder = Embedder.for_queries_of(infos[0].model_id)
        shapes = {shape: queries_of(shape, args.queries) for shape in args.shapes}
        result = {"versions": {i.version: i.rows for i in infos}, "k": args.k, "ef_search": args.efs,
                  "queries": {shape: len(texts) for shape, texts in shapes.items()}}
        for shape, texts in shapes.items():
            result[shape] = shape_run(conn, infos, embedder.encode(texts), args)
    return result


def shape_run(conn, infos, vectors, args) -> dict:
    """Per version and ef_search: recall@k against the exact scan and the HNSW step's latency; the
    exact top k is read once a query, the versions and ef values take turns going first."""
    runs = [(info, ef) for info in infos for ef in args.efs]
    recall = {(i.version, ef): [] for i, ef in runs}
    times = {(i.version, ef): [] for i, ef in runs}
    for info in infos:
        step(conn, info, vectors[0], SearchConfig(), False)  # warm
    for position, vector in enumerate(vectors):
        exact = {i.version: set(top_ids(conn, i.table_name, vector, args.k, True, 100)[0]) for i in infos}
        turn = position % len(runs)
        for info, ef in runs[turn:] + runs[:turn]:
            ids = top_ids(conn, info.table_name, vector, args.k, False, ef)[0]
            recall[(info.version, ef)].append(len(exact[info.version] & set(ids)) / max(1, len(exact[info.version])))
            times[(info.version, ef)].append(step(conn, info, vector, SearchConfig().but(ef_search=ef), False))
    return {f"{v}_ef{ef}": summary(times[(v, ef)], recall[(v, ef)]) for v, ef in times}


def drop(args) -> dict:
    database = ensure_database(load_settings())
    with connect(database) as conn:
        table = versions.get_version(conn, args.version).table_name
        return {"dropped": drop_scratch(conn, table), "indexes": indexes_of(conn, table)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    half = commands.add_parser("halfvec", help="a halfvec HNSW index beside the version's own")
    half.add_argument("--version", required=True, help="index version in LECTIO_HOME (e.g. v5)")
    half.add_argument("--rebuild-fp32", action="store_true",
                      help="also build the fp32 index again under a scratch name, for its build time in this run")
    half.add_argument("--ef", type=int, default=SearchConfig().vector.ef_search)
    half.add_argument("--maintenance-work-mem", default="3GB", help="as scale.py builds")
    half.add_argument("--workers", type=int, default=1, help="max_parallel_maintenance_workers, as scale.py builds")
    ef = commands.add_parser("ef", help="recall and the HNSW step at several ef_search, by query shape")
    ef.add_argument("--versions", type=lambda v: [x for x in v.split(",") if x], required=True, help="e.g. v4,v7")
    ef.add_argument("--efs", type=lambda v: [int(x) for x in v.split(",") if x], default=[100, 150, 200])
    ef.add_argument("--shapes", type=lambda v: [x for x in v.split(",") if x], default=list(SHAPES),
                    help=f"query shapes, of {', '.join(SHAPES)}")
    for sub in (half, ef):
        sub.add_argument("--queries", type=int, default=40, help="queries (per shape)")
        sub.add_argument("--k", type=int, default=20)
    cleanup = commands.add_parser("drop", help="drop the scratch indexes a crashed run left")
    cleanup.add_argument("--version", required=True)
    args = parser.parse_args()
    run = {"halfvec": halfvec, "ef": ef_by_shape, "drop": drop}[args.command]
    print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()
