"""Search latency at k=20 on an index version, and HNSW recall against exact search.

Baseline, measured in the same run: the same vector query with index scans disabled
(`enable_indexscan = off`), i.e. an exact scan of every row. Reported: p50/p95 latency of
hybrid search (end to end, query embedding included), of the HNSW vector step and of the exact
scan, the exact/HNSW latency ratio, and HNSW recall@20 = share of the exact top 20 that the
HNSW scan also returns, at the configured ef_search; and the same at the number of candidates
the vector side of hybrid search takes (100). Every search goes through `lectio.retrieval.search`
as users get it: the reader role, row-level security, the default filters and clauses.

Hybrid search runs as the service runs it, its vector side on a second connection; hybrid on
one connection (as `lectio search` runs it) is reported beside it. Also p50/p95 of vector-only
and lexical-only search (the ratio hybrid/vector is the price of fusion); BM25 read from the version's postings against BM25 scoring every chunk that holds a
query word (the way before postings), on the same version: the latency ratio, how many of the
exact top candidates the postings find, and whether their scores are the same; and a
concurrency run against `lectio serve` over loopback: 1, 2, 4 and 8 clients, throughput and p95
per level.

    LECTIO_HOME=… python benchmarks/search_latency.py [--queries data/queries/theology.jsonl] [--part dev]
        [--ef 400] [--depth 4000 --rescored 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from psycopg import sql

from lectio.index import store
from lectio.index.database import ensure_database
from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import load_queries, select_part
from lectio.bible.refs import UnknownReference, parse_reference
from lectio.index import security
from lectio.retrieval.candidates import lexical_candidates
from lectio.retrieval.search import (DEFAULT_PRINCIPALS, DEFAULT_TRANSLATION, Filters, SearchConfig, _Filters,
                                     expansion_words, search)
from lectio.settings import load_settings


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def top_ids(conn, table: str, vector, k: int, exact: bool, ef: int) -> tuple[list[str], float]:
    with conn.transaction():
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
        started = time.perf_counter()
        # prepare=False: psycopg prepares a statement run five times, and PostgreSQL then reuses
        # one plan for it; the plan made for the exact scan (index scans off) would then serve
        # the HNSW runs too, and both would measure an exact scan.
        rows = conn.execute(
            sql.SQL("SELECT chunk_id FROM {} WHERE acl && %s ORDER BY embedding <=> %s LIMIT %s").format(
                sql.Identifier(table)),
            [["public"], vector, k],
            prepare=False,
        ).fetchall()
        return [r[0] for r in rows], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default="data/queries/theology.jsonl")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--ef", type=int, default=SearchConfig().ef_search)
    parser.add_argument("--bm25-only", action="store_true", help="only compare BM25 from postings with the full scan")
    parser.add_argument("--clients", default="1,2,4,8", help="concurrency levels against the service ('' skips it)")
    parser.add_argument("--service-queries", type=int, default=40, help="queries each client sends (default 40)")
    parser.add_argument("--index", help="index version (default: the live one)")
    parser.add_argument("--part", choices=("dev", "test", "all"), default="all", help="which part of the query set")
    parser.add_argument("--depth", type=int, default=SearchConfig().lexical_depth, help="postings read per query word")
    parser.add_argument("--rescored", type=int, default=SearchConfig().lexical_rescored, help="chunks scored in full")
    args = parser.parse_args()

    def is_reference(text: str) -> bool:
        try:
            return bool(parse_reference(text))
        except UnknownReference:
            return True

    queries = [q.query for q in select_part(load_queries(args.queries), args.part) if not is_reference(q.query)]
    embedder = Embedder()
    vectors = embedder.encode(queries)
    database = ensure_database(load_settings())
    with database.connect() as conn, database.connect() as side:
        store.ensure_schema(conn)
        version = store.get_version(conn, args.index)
        if args.bm25_only:
            config = SearchConfig(lexical_depth=args.depth, lexical_rescored=args.rescored)
            print(json.dumps(postings_against_scan(conn, version, queries, config), indent=2))
            return
        # As the service searches: the vector side on a second connection.
        run = lambda query, **options: search(conn, query, k=args.k, embedder=embedder,  # noqa: E731
                                              version=version.version, **{"vector_conn": side, **options})
        run(queries[0])  # warm caches
        hybrid, one_connection, hnsw, exact, recalls, candidate_recalls = [], [], [], [], [], []
        vector_only, lexical_only = [], []
        candidates = SearchConfig().candidates
        variants = [(hybrid, {}), (one_connection, {"vector_conn": None}),
                    (vector_only, {"config": SearchConfig(mode="vector")}),
                    (lexical_only, {"config": SearchConfig(mode="lexical")})]
        for position, (query, vector) in enumerate(zip(queries, vectors)):
            # The first search of a query reads its pages from disk for the others: each variant
            # goes first for a quarter of the queries.
            turn = position % len(variants)
            for times, options in variants[turn:] + variants[:turn]:
                started = time.perf_counter()
                run(query, **options)
                times.append(time.perf_counter() - started)
            approx_ids, t_hnsw = top_ids(conn, version.table_name, vector, args.k, False, args.ef)
            exact_ids, t_exact = top_ids(conn, version.table_name, vector, args.k, True, args.ef)
            hnsw.append(t_hnsw)
            exact.append(t_exact)
            recalls.append(len(set(approx_ids) & set(exact_ids)) / len(exact_ids))
            # The vector side of hybrid search takes `candidates` rows, not k.
            wide_approx, _ = top_ids(conn, version.table_name, vector, candidates, False, max(args.ef, candidates))
            wide_exact, _ = top_ids(conn, version.table_name, vector, candidates, True, args.ef)
            candidate_recalls.append(len(set(wide_approx) & set(wide_exact)) / len(wide_exact))
        bm25 = postings_against_scan(conn, version, queries,
                                     SearchConfig(lexical_depth=args.depth, lexical_rescored=args.rescored))
    ms = lambda values, p: round(1000 * percentile(values, p), 1)  # noqa: E731
    print(json.dumps({
        "index_version": version.version,
        "rows": version.rows,
        "queries": len(queries),
        "k": args.k,
        "ef_search": args.ef,
        "hybrid_ms_p50": ms(hybrid, 50), "hybrid_ms_p95": ms(hybrid, 95),
        "hybrid_one_connection_ms_p50": ms(one_connection, 50), "hybrid_one_connection_ms_p95": ms(one_connection, 95),
        "vector_ms_p50": ms(vector_only, 50), "vector_ms_p95": ms(vector_only, 95),
        "lexical_ms_p50": ms(lexical_only, 50), "lexical_ms_p95": ms(lexical_only, 95),
        "hybrid_over_vector_p95": round(percentile(hybrid, 95) / percentile(vector_only, 95), 2),
        "hnsw_ms_p50": ms(hnsw, 50), "hnsw_ms_p95": ms(hnsw, 95),
        "exact_ms_p50": ms(exact, 50), "exact_ms_p95": ms(exact, 95),
        "exact_over_hnsw_p50": round(statistics.median(exact) / statistics.median(hnsw), 1),
        "hnsw_recall_at_k": round(statistics.mean(recalls), 4),
        "candidates": candidates,
        "hnsw_recall_at_candidates": round(statistics.mean(candidate_recalls), 4),
        "hnsw_recall_at_candidates_min": round(min(candidate_recalls), 4),
        "bm25": bm25,
        "service": concurrency(queries[: args.service_queries], [int(c) for c in args.clients.split(",") if c.strip()],
                               args.k),
    }, indent=2))


def postings_against_scan(conn, version, queries: list[str], config: SearchConfig) -> dict:
    """BM25 candidates of each query both ways on one version, as the reader with public's view
    and the default filters: what the postings find of the full scan's, and at what cost."""
    if (version.layout or 0) < 7:
        return {"skipped": f"{version.version} was built before postings (layout {version.layout})"}
    filters = _Filters(DEFAULT_PRINCIPALS, Filters(), (version.rows, version.avg_doc_lexemes))
    where, params = filters.where(DEFAULT_TRANSLATION)
    read_times, scan_times, found, differences = [], [], [], []
    for query in queries:
        extra = expansion_words(query, config)
        with conn.transaction():
            security.act_as_reader(conn, DEFAULT_PRINCIPALS)
            started = time.perf_counter()
            read = lexical_candidates(conn, version.table_name, query, extra, where, params, config, version.layout, where)
            read_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            scanned = lexical_candidates(conn, version.table_name, query, extra, where, params, config, None)
            scan_times.append(time.perf_counter() - started)
        exact = dict(scanned)
        found.append(len(set(exact) & {chunk_id for chunk_id, _ in read}) / max(1, len(exact)))
        differences += [abs(score - exact[chunk_id]) for chunk_id, score in read if chunk_id in exact]
    ms = lambda values, p: round(1000 * percentile(values, p), 1)  # noqa: E731
    return {
        "depth": config.lexical_depth, "rescored": config.lexical_rescored,
        "postings_ms_p50": ms(read_times, 50), "postings_ms_p95": ms(read_times, 95),
        "scan_ms_p50": ms(scan_times, 50), "scan_ms_p95": ms(scan_times, 95),
        "scan_over_postings_p50": round(statistics.median(scan_times) / statistics.median(read_times), 1),
        "found_of_scan_top": round(statistics.mean(found), 4), "found_of_scan_top_min": round(min(found), 4),
        "max_score_difference": max(differences, default=0.0),
    }


def concurrency(queries: list[str], levels: list[int], k: int) -> list[dict]:
    """Each level: that many clients over loopback, each sending every query once (warm service)."""
    import threading
    import urllib.parse
    import urllib.request

    import uvicorn

    from lectio.serving.app import create_app
    from lectio.serving.auth import Verifier

    if not levels:
        return []
    app = create_app(load_settings(), Verifier(), pool_size=max(levels))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.1)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/search"

    def ask(query: str) -> float:
        started = time.perf_counter()
        with urllib.request.urlopen(f"{url}?{urllib.parse.urlencode({'q': query, 'k': k})}", timeout=120) as answer:
            answer.read()
        return time.perf_counter() - started

    ask(queries[0])
    results = []
    for clients in levels:
        times: list[float] = []
        lock = threading.Lock()

        def client():
            for query in queries:
                elapsed = ask(query)
                with lock:
                    times.append(elapsed)

        started = time.perf_counter()
        workers = [threading.Thread(target=client) for _ in range(clients)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall = time.perf_counter() - started
        results.append({"clients": clients, "requests": len(times), "per_second": round(len(times) / wall, 1),
                        "p50_ms": round(1000 * percentile(times, 50), 1), "p95_ms": round(1000 * percentile(times, 95), 1)})
    server.should_exit = True
    thread.join(30)
    return results


if __name__ == "__main__":
    main()
