"""The trained reranker's quality against its cost: the hybrid search without it (the baseline) and
with it at several depths and input lengths, on one query set's part, in one process.

Every query is searched by every configuration in turn (the order rotating from query to query,
so a burst of other work on a shared machine falls on all of them alike), through
`lectio.retrieval.search` (lectio.retrieval.door) on one connection as `lectio eval` and `lectio search` run it: the
reader role, row-level security, the query's own filters and principals. Reported per
configuration: the set's metrics, p50/p95 latency, the p95 ratio to the baseline, and the paired
95 % bootstrap interval of each metric's change against the baseline (an interval that excludes
0 is a change beyond noise). With --plot, a PNG of nDCG@10 against p95 latency: the curve.

    LECTIO_HOME=… python benchmarks/rerank.py --model latest --queries data/queries/theology.jsonl \
        --part dev [--depths 10,20,30] [--tokens 96,128] [--weights 1] [--k 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

from lectio.embedding.model import Embedder
from lectio.evaluation.metrics import METRICS, LabelledQuery, _latency, score_query
from lectio.evaluation.paired import paired_interval
from lectio.evaluation.querysets import load_queries, select_part
from lectio.index import schema, versions
from lectio.index.database import ensure_database
from lectio.retrieval.filters import Filters
from lectio.retrieval import DEFAULT_PRINCIPALS, SearchConfig, SearchRequest, search
from lectio.settings import load_settings

SHOWN = ("recall@20", "mrr", "ndcg@10", "budget_recall@1000")


def configurations(args) -> dict[str, SearchConfig]:
    found = {"hybrid": SearchConfig()}
    for depth in map(int, args.depths.split(",")):
        for tokens in map(int, args.tokens.split(",")):
            for weight in map(float, args.weights.split(",")):
                found[f"rerank d{depth} t{tokens} w{weight:g}"] = SearchConfig.from_options(
                    [f"stages.rerank.model={args.model}", f"stages.rerank.depth={depth}",
                     f"stages.rerank.tokens={tokens}", f"stages.rerank.weight={weight}"])
    return found


def labelled(queries) -> list[LabelledQuery]:
    return [LabelledQuery(id=q.id, query=q.query, relevant=frozenset(q.relevant_set),
                          should_not_appear=frozenset(q.should_not_appear), must_include_text=tuple(q.must_include_text),
                          principals=tuple(q.principals), filters=dict(q.filters or {})) for q in queries]


def run(conn, queries: list[LabelledQuery], configs: dict[str, SearchConfig], embedder, args) -> dict:
    rows = {name: [] for name in configs}
    times = {name: [] for name in configs}
    names = list(configs)
    for number, q in enumerate(queries):
        for name in names[number % len(names):] + names[:number % len(names)]:
            request = SearchRequest(q.query, k=args.k, principals=q.principals or DEFAULT_PRINCIPALS,
                                    filters=Filters(**q.filters), version=args.index, config=configs[name])
            started = time.perf_counter()
            results = search(conn, request, embedder=embedder).results
            times[name].append((time.perf_counter() - started) * 1000)
            rows[name].append({"id": q.id, **score_query(q, results, args.k)})
    return {name: summary(rows[name], rows["hybrid"], times[name], times["hybrid"]) for name in configs}


def summary(rows: list[dict], baseline: list[dict], times: list[float], baseline_times: list[float]) -> dict:
    overall = {}
    for metric in METRICS:
        values = [r[metric] for r in rows if r[metric] is not None]
        overall[metric] = round(sum(values) / len(values), 4) if values else None
    latency = _latency(times)
    return {"overall": overall, "latency_ms": latency,
            "p95_over_hybrid": round(latency["p95"] / _latency(baseline_times)["p95"], 2),
            "change_interval": {m: paired_interval(baseline, rows, m) for m in SHOWN}}


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, found in results.items():
        ax.scatter(found["latency_ms"]["p95"], found["overall"]["ndcg@10"])
        ax.annotate(name, (found["latency_ms"]["p95"], found["overall"]["ndcg@10"]), fontsize=7)
    ax.set_xlabel("p95 latency (ms)")
    ax.set_ylabel("nDCG@10")
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="latest", help="a trained reranker's id (lectio model show)")
    parser.add_argument("--queries", default="data/queries/theology.jsonl")
    parser.add_argument("--part", default="dev", choices=["dev", "test", "all"])
    parser.add_argument("--index", help="index version (default: the live one)")
    parser.add_argument("--depths", default="20")
    parser.add_argument("--tokens", default="128")
    parser.add_argument("--weights", default="1")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--plot", help="write the quality-latency curve to this PNG")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    queries = labelled(select_part(load_queries(args.queries), args.part))
    with ensure_database(load_settings()).connect() as conn:
        schema.ensure_schema(conn)
        info = versions.get_version(conn, args.index)
        embedder = Embedder.for_queries_of(info.model_id)
        results = run(conn, queries, configurations(args), embedder, args)
    if args.plot:
        plot(results, args.plot)
    if args.json:
        print(json.dumps({"queries": args.queries, "part": args.part, "n": len(queries), "results": results}, indent=2))
        return
    print(f"{args.queries} ({args.part}, {len(queries)} queries)")
    for name, found in results.items():
        metrics = "  ".join(f"{m} {found['overall'][m]}" for m in SHOWN)
        changes = "  ".join(f"{m} {found['change_interval'][m]}" for m in SHOWN) if name != "hybrid" else ""
        print(f"{name:<24} {metrics}  p50 {found['latency_ms']['p50']} p95 {found['latency_ms']['p95']} ms "
              f"(x{found['p95_over_hybrid']})\n{'':<24} {changes}".rstrip())


if __name__ == "__main__":
    main()
