"""Search latency at k=20 on an index version, and HNSW recall against exact search.

Baseline, measured in the same run: the same vector query with index scans disabled
(`enable_indexscan = off`), i.e. an exact scan of every row. Reported: p50/p95 latency of
hybrid search (end to end, query embedding included), of the HNSW vector step and of the exact
scan, the exact/HNSW latency ratio, and HNSW recall@20 = share of the exact top 20 that the
HNSW scan also returns, at the configured ef_search; and the same at the number of candidates
the vector side of hybrid search takes (100). Every search goes through `lectio.retrieval.search` (lectio.retrieval.door)
as users get it: the reader role, row-level security, the default filters and clauses.

Hybrid search runs as the service runs it, its vector side on a second connection; hybrid on
one connection (as `lectio search` runs it) is reported beside it, and hybrid and lexical-only
with BM25 in SQL (`lexical.mirror` off) beside those from the lexical mirror, and hybrid without
the other translations' BM25 that a one-word topic reads (`hybrid_own_translation`; run on
topics, `--queries data/queries/naves.jsonl`, for its cost). Also p50/p95 of
vector-only and lexical-only search (the ratio hybrid/vector is the price of fusion), and hybrid
asked with `kind: scripture` with and without the evidence of the other kinds, which ranks the
query a second time unfiltered (`scripture_evidence_over_without_p95` is its price).

BM25 three ways on the same version, as the reader with public's view: from the lexical mirror
(lectio.index.mirror, every matching chunk scored in process and confirmed under row-level
security), from the postings in SQL (the fallback), and by SQL scoring every chunk that holds a
query word (the reference): each one's latency and ratio to the mirror, how many of the
reference's top candidates each finds, and whether the mirror's list is the reference's.

Each stage of a hybrid search timed alone, p50/p95 (`stages`): the query embedding, BM25 and
pericope titles from the mirror (as a search takes them), BM25 from the postings in SQL and the
title match in SQL (the fallback), the HNSW step, fusion with the citation prior (its counts from
the mirror; the same counts read in SQL beside it), and the
read of the returned rows. Last, a concurrency run against `lectio serve` over loopback: 1, 2, 4
and 8 clients, throughput and p95 per level.

    LECTIO_HOME=… python benchmarks/search_latency.py [--queries data/queries/theology.jsonl] [--part dev]
        [--ef 400] [--depth 4000 --rescored 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from psycopg import sql

from lectio.index import citations, mirror, schema, versions
from lectio.index.database import ensure_database
from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import load_queries, select_part
from lectio.bible.refs import UnknownReference, parse_reference
from lectio.index import security
from lectio.retrieval import lexical
from lectio.retrieval.hits import hits_by_id
from lectio.retrieval.fusion import fuse, weigh_prominence
from lectio.retrieval.vector import vector_candidates
from lectio.retrieval.filters import Filters
from lectio.retrieval.scope import Scope
from lectio.retrieval.expansion import expansion_words
from lectio.retrieval import DEFAULT_PRINCIPALS, DEFAULT_TRANSLATION, SearchConfig, SearchRequest, search
from lectio.settings import load_settings


def is_reference(text: str) -> bool:
    """A reference is looked up, not ranked: it has no retrieval to time."""
    try:
        return bool(parse_reference(text))
    except UnknownReference:
        return True


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def ms(values: list[float], p: float) -> float:
    """The p-th percentile of `values` (seconds) in milliseconds, to a tenth."""
    return round(1000 * percentile(values, p), 1)


def public_scope(version) -> Scope:
    """What public's reader sees of `version` under the default filters."""
    return Scope(DEFAULT_PRINCIPALS, Filters(), version.bm25_corpus)


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
    parser.add_argument("--ef", type=int, default=SearchConfig().vector.ef_search)
    parser.add_argument("--bm25-only", action="store_true",
                        help="only compare BM25 three ways: mirror, postings, full scan")
    parser.add_argument("--clients", default="1,2,4,8", help="concurrency levels against the service ('' skips it)")
    parser.add_argument("--service-queries", type=int, default=40, help="queries each client sends (default 40)")
    parser.add_argument("--index", help="index version (default: the live one)")
    parser.add_argument("--part", choices=("dev", "test", "all"), default="all", help="which part of the query set")
    parser.add_argument("--depth", type=int, default=SearchConfig().lexical.depth, help="postings read per query word")
    parser.add_argument("--compare-ef", type=lambda v: [int(x) for x in v.split(",") if x], default=[400],
                        help="also time the HNSW stage at these ef_search values (default 400)")
    parser.add_argument("--rescored", type=int, default=SearchConfig().lexical.rescored, help="chunks scored in full")
    args = parser.parse_args()

    queries = [q.query for q in select_part(load_queries(args.queries), args.part) if not is_reference(q.query)]
    database = ensure_database(load_settings())
    with database.connect() as conn, database.connect() as side:
        schema.ensure_schema(conn)
        version = versions.get_version(conn, args.index)
        # The version's queries embedded as a search embeds them (its query runtime, which need not
        # be the runtime this home ingests with), for the stages and the exact comparison alike.
        embedder = Embedder.for_queries_of(version.model_id)
        vectors = embedder.encode(queries)
        started = time.perf_counter()
        mirrored = mirror.ensure(conn, version)  # built once per version, as the owner
        mirror_seconds = round(time.perf_counter() - started, 1)
        config = SearchConfig.from_options(lexical_depth=args.depth, lexical_rescored=args.rescored)
        if args.bm25_only:
            print(json.dumps(bm25_three_ways(conn, version, mirrored, queries, config), indent=2))
            return
        # As the service searches: the vector side on a second connection.
        def run(query, vector_conn=side, **options):
            return search(conn, SearchRequest(query, k=args.k, version=version.version, **options), embedder=embedder,
                          vector_conn=vector_conn)

        run(queries[0])  # warm caches
        hybrid, one_connection, hnsw, exact, recalls, candidate_recalls = [], [], [], [], [], []
        vector_only, lexical_only, hybrid_sql, lexical_sql, own_translation = [], [], [], [], []
        # Asked for scripture, a hybrid ranks the query unfiltered too, for the evidence of the
        # other kinds (lectio.retrieval.config.EvidenceSettings): with it and without it.
        scripture, scripture_alone = [], []
        only_scripture = Filters(kind="scripture")
        candidates = SearchConfig().candidates
        variants = [(hybrid, {}), (one_connection, {"vector_conn": None}),
                    (vector_only, {"config": SearchConfig.from_options(mode="vector")}),
                    (lexical_only, {"config": SearchConfig.from_options(mode="lexical")}),
                    (hybrid_sql, {"config": SearchConfig.from_options(lexical_mirror=False)}),
                    (lexical_sql, {"config": SearchConfig.from_options(mode="lexical", lexical_mirror=False)}),
                    (own_translation, {"config": SearchConfig.from_options(topic_other_translations_weight=0.0)}),
                    (scripture, {"filters": only_scripture}),
                    (scripture_alone, {"filters": only_scripture, "config": SearchConfig.from_options(["evidence.weight=0"])})]
        for position, (query, vector) in enumerate(zip(queries, vectors)):
            # The first search of a query reads its pages from disk for the others: each variant
            # goes first in turn.
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
        bm25 = bm25_three_ways(conn, version, mirrored, queries, config)
        breakdown = stages(conn, version, mirrored, queries, embedder, config, args.compare_ef)
    print(json.dumps({
        "index_version": version.version,
        "rows": version.rows,
        "queries": len(queries),
        "k": args.k,
        "ef_search": args.ef,
        "mirror_build_seconds": mirror_seconds,
        "hybrid_ms_p50": ms(hybrid, 50), "hybrid_ms_p95": ms(hybrid, 95),
        "hybrid_sql_bm25_ms_p50": ms(hybrid_sql, 50), "hybrid_sql_bm25_ms_p95": ms(hybrid_sql, 95),
        "lexical_sql_bm25_ms_p50": ms(lexical_sql, 50), "lexical_sql_bm25_ms_p95": ms(lexical_sql, 95),
        "hybrid_one_connection_ms_p50": ms(one_connection, 50), "hybrid_one_connection_ms_p95": ms(one_connection, 95),
        "vector_ms_p50": ms(vector_only, 50), "vector_ms_p95": ms(vector_only, 95),
        "lexical_ms_p50": ms(lexical_only, 50), "lexical_ms_p95": ms(lexical_only, 95),
        "hybrid_over_vector_p95": round(percentile(hybrid, 95) / percentile(vector_only, 95), 2),
        "hybrid_own_translation_ms_p50": ms(own_translation, 50),
        "hybrid_own_translation_ms_p95": ms(own_translation, 95),
        "hybrid_over_own_translation_p95": round(percentile(hybrid, 95) / percentile(own_translation, 95), 2),
        "hybrid_scripture_ms_p50": ms(scripture, 50), "hybrid_scripture_ms_p95": ms(scripture, 95),
        "hybrid_scripture_without_evidence_ms_p50": ms(scripture_alone, 50),
        "hybrid_scripture_without_evidence_ms_p95": ms(scripture_alone, 95),
        "scripture_evidence_over_without_p95": round(percentile(scripture, 95) / percentile(scripture_alone, 95), 2),
        "hnsw_ms_p50": ms(hnsw, 50), "hnsw_ms_p95": ms(hnsw, 95),
        "exact_ms_p50": ms(exact, 50), "exact_ms_p95": ms(exact, 95),
        "exact_over_hnsw_p50": round(statistics.median(exact) / statistics.median(hnsw), 1),
        "hnsw_recall_at_k": round(statistics.mean(recalls), 4),
        "candidates": candidates,
        "hnsw_recall_at_candidates": round(statistics.mean(candidate_recalls), 4),
        "hnsw_recall_at_candidates_min": round(min(candidate_recalls), 4),
        "bm25": bm25,
        "stages": breakdown,
        "service": concurrency(queries[: args.service_queries], [int(c) for c in args.clients.split(",") if c.strip()],
                               args.k),
    }, indent=2))


def bm25_three_ways(conn, version, mirrored, queries: list[str], config: SearchConfig) -> dict:
    """BM25 candidates of each query from the mirror, from the postings in SQL and by SQL scoring
    every matching chunk (the reference), as the reader with public's view and the default
    filters: what each finds of the reference's, and at what cost."""
    if (version.layout or 0) < 7 or mirrored is None:
        return {"skipped": f"{version.version} has no postings (layout {version.layout}) or no mirror"}
    filters = public_scope(version)
    where, params = filters.where(DEFAULT_TRANSLATION)
    conditions = filters.conditions(DEFAULT_TRANSLATION)
    rows = lexical.Rows(conn, version.table_name, where, params, version.layout)
    indexes = {"mirror": lexical.MirrorIndex(rows, mirrored, mirrored.mask(conditions), filters.corpus,
                                             mirrored.sets(filters.principals)),
               "postings": lexical.PostingsIndex(rows, where), "scan": lexical.ScanIndex(rows)}
    times = {"mirror": [], "postings": [], "scan": []}
    found = {"mirror": [], "postings": []}
    same, same_but_ties, differences = 0, 0, []
    for query in queries:
        extra = expansion_words(query, config.expansion)
        with conn.transaction():
            security.act_as_reader(conn, DEFAULT_PRINCIPALS)
            lists = {}
            for name, index in indexes.items():
                started = time.perf_counter()
                # The mirror's BM25 confirmed in the read that confirms its titles too, as a search takes it.
                lists[name] = index.proposals(query, extra, config).words if name == "mirror" else \
                    index.words(query, extra, config)
                times[name].append(time.perf_counter() - started)
        exact = dict(lists["scan"])
        for name in found:
            found[name].append(len(set(exact) & {chunk_id for chunk_id, _ in lists[name]}) / max(1, len(exact)))
        same += [chunk_id for chunk_id, _ in lists["mirror"]] == [chunk_id for chunk_id, _ in lists["scan"]]
        same_but_ties += _ranked_alike(lists["mirror"], lists["scan"])
        differences += [abs(score - exact[chunk_id]) for chunk_id, score in lists["mirror"] if chunk_id in exact]
    ms = lambda values, p: round(1000 * percentile(values, p), 2)  # noqa: E731
    report = {"depth": config.lexical.depth, "rescored": config.lexical.rescored}
    for name, values in times.items():
        report |= {f"{name}_ms_p50": ms(values, 50), f"{name}_ms_p95": ms(values, 95)}
    for name in ("postings", "scan"):
        for p in (50, 95):
            report[f"{name}_over_mirror_p{p}"] = round(percentile(times[name], p) / percentile(times["mirror"], p), 1)
    for name, shares in found.items():
        report |= {f"{name}_found_of_scan_top": round(statistics.mean(shares), 4),
                   f"{name}_found_of_scan_top_min": round(min(shares), 4)}
    report |= {"mirror_list_equals_scan": f"{same}/{len(queries)}",
               "mirror_list_equals_scan_but_ties": f"{same_but_ties}/{len(queries)}",
               "mirror_max_score_difference": max(differences, default=0.0)}
    return report


def _ranked_alike(one: list[tuple[str, float]], other: list[tuple[str, float]]) -> bool:
    """The same chunks in the same order, except that chunks whose scores differ only by float
    rounding may stand in either order (SQL sums a chunk's words in whatever order its plan reads
    them; the mirror breaks such ties by chunk id) and a tie at the cut may keep either."""
    scores = [[round(score, 9) for _, score in ranked] for ranked in (one, other)]
    if scores[0] != scores[1]:
        return False
    last = scores[0][-1] if scores[0] else 0.0
    above = [sorted((-round(score, 9), chunk_id) for chunk_id, score in ranked if round(score, 9) > last)
             for ranked in (one, other)]
    return above[0] == above[1]


def stages(conn, version, mirrored, queries: list[str], embedder, config: SearchConfig,
           compare_ef: list[int] = ()) -> dict:
    """Each stage of a hybrid search timed alone for every query (public's view, default filters),
    p50/p95 in ms: what each costs, and so which one sets the floor."""
    filters = public_scope(version)
    where, params = filters.where(DEFAULT_TRANSLATION)
    conditions, table = filters.conditions(DEFAULT_TRANSLATION), version.table_name
    rows = lexical.Rows(conn, table, where, params, version.layout)
    in_mirror, in_postings = lexical.MirrorIndex(rows, mirrored, mirrored.mask(conditions), filters.corpus,
                                             mirrored.sets(filters.principals)), \
        lexical.PostingsIndex(rows, where)
    times: dict[str, list[float]] = {}

    def timed(name, work):
        started = time.perf_counter()
        value = work()
        times.setdefault(name, []).append(time.perf_counter() - started)
        return value

    for query in queries:
        extra = expansion_words(query, config.expansion)
        vector = timed("embed", lambda: embedder.encode([query])[0])
        with conn.transaction():
            security.act_as_reader(conn, DEFAULT_PRINCIPALS)
            # BM25 and titles from the mirror, confirmed in one read; each one's SQL way beside it.
            words, titles = timed("lexical_mirror", lambda: in_mirror.proposals(query, extra, config))
            timed("lexical_sql_postings", lambda: in_postings.words(query, extra, config))
            timed("titles_sql", lambda: in_postings.titles(query, config))
            near = timed("hnsw", lambda: vector_candidates(conn, table, vector, where, params, config))
            for ef in compare_ef:  # the same step at another ef_search, for the ratio in the same run
                timed(f"hnsw_ef{ef}", lambda: vector_candidates(
                    conn, table, vector, where, params, config.but(ef_search=ef)))
            fused = timed("fusion", lambda: weigh_prominence(
                fuse([(1.0, near), (1.0, words), (1.0, titles)], config.fusion.rrf_k),
                config.fusion.prominence_weight, in_mirror.cited))
            timed("citations_sql", lambda: citations.most_cited(conn, table, [chunk_id for chunk_id, _ in fused],
                                                                version.layout))
            timed("rows", lambda: hits_by_id(conn, table, fused[:80]))
    return {name: {"p50": round(1000 * percentile(values, 50), 2), "p95": round(1000 * percentile(values, 95), 2)}
            for name, values in times.items()}


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
