"""`lectio eval`: an index version scored against a labelled query set, with the baselines' designs beside it."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.output import print_payload
from lectio.index import revocation, schema, versions
from lectio.index.database import ensure_database
from lectio.retrieval import MODES, Mode, SearchOptions
from lectio.settings import load_settings


def eval_options(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument("queries", help="JSONL query set, one labelled query per line")
    evaluate.add_argument("--k", type=int, default=20)
    evaluate.add_argument("--index", help="index version (default: the live one)")
    evaluate.add_argument("--mode", choices=MODES, default=Mode.HYBRID)
    evaluate.add_argument("--part", choices=["dev", "test", "all"], default="all",
                          help="score the set's dev part (tune on it), its test part (report it) or all of it; "
                               "the parts are fixed by a hash of each query's id")
    evaluate.add_argument("--prominence", type=float, metavar="WEIGHT",
                          help="the citation prior's weight for this evaluation (to compare on a dev part)")
    evaluate.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="settings",
                          help="a search setting for this evaluation, e.g. vector.ef_search=200 or "
                               "stages.query_share.weight=0.5 (a setting's path in lectio.retrieval.config."
                               "SearchConfig, or its flat name such as ef_search; repeatable)")
    evaluate.add_argument("--baselines", action="store_true",
                          help="also score plain verse-vector, verse-BM25, verse-hybrid and chapter-vector designs "
                               "on the same index version")


def evaluate(args) -> int:
    from lectio.evaluation.metrics import evaluate_index
    from lectio.evaluation.querysets import load_queries, select_part
    from lectio.retrieval import SearchConfig

    if problem := SearchOptions(prominence=args.prominence).problem():  # named as the option, as search names it
        raise ValueError(f"--{problem}")
    config = SearchConfig.from_options(args.settings, mode=args.mode, prominence_weight=args.prominence)
    settings = load_settings()
    queries = select_part(load_queries(Path(args.queries)), args.part)
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        # A version that cannot be searched is refused, not scored as zeros.
        version = args.index or versions.live_version(conn)
        if version is None:
            raise ValueError("no live index yet: run `lectio run` first")
        revocation.refuse_unservable(conn, version)
        report = evaluate_index(conn, queries, k=args.k, version=args.index, baselines=args.baselines, config=config)
    report["part"] = args.part
    overall = {"part": args.part, **report["overall"]}
    text = "\n".join(f"{metric:<20} {value if value is not None else '-'}" for metric, value in overall.items())
    if args.baselines:
        text += "\n\n" + _baselines_table(report["overall"], report["baselines"])
    print_payload(args, report, text)
    return 0


def _baselines_table(lectio: dict, baselines: dict) -> str:
    metrics = ("recall@20", "mrr", "precision@5", "ndcg@10", "budget_recall@1000")
    rows = [("system", *metrics), *[(name, *(overall.get(m) for m in metrics))
                                    for name, overall in {"lectio": lectio, **baselines}.items()]]
    return "\n".join(f"{r[0]:<16}" + "".join(f"{'-' if v is None else v:>20}" for v in r[1:]) for r in rows)
