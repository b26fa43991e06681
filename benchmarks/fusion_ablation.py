"""Fusion settings scored side by side on a query set's part, each against the default with a
paired 95 % bootstrap interval: the table that decides fusion defaults on dev parts, and reports
them on test parts.

    python benchmarks/fusion_ablation.py data/queries/quotations.jsonl --part dev \\
        --variant fusion.prominence_weight=0 --variant fusion.score_power=1 \\
        --variant fusion.score_power=1,stages.collapse.min_new_share=0.5

A variant is one or more FIELD=VALUE assignments joined by commas (`lectio eval --set`'s
fields); `--base` changes what the variants are compared with (default: the shipped defaults).
Each row ends with the search's p50/p95 in this process (query embedding included), so a row is
one point of the quality/latency curve.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lectio.evaluation.paired import paired_interval
from lectio.evaluation.metrics import evaluate_index
from lectio.evaluation.querysets import load_queries, select_part
from lectio.index import schema
from lectio.index.database import ensure_database
from lectio.retrieval.config import SearchConfig
from lectio.settings import load_settings

METRICS = ("recall@20", "mrr", "ndcg@10", "budget_recall@1000")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", type=Path, nargs="+")
    parser.add_argument("--part", default="dev")
    parser.add_argument("--index", help="version (default: live)")
    parser.add_argument("--base", default="", help="the comparison's settings, as a variant")
    parser.add_argument("--variant", action="append", default=[])
    parser.add_argument("--out", type=Path, help="also write every report here (JSON)")
    args = parser.parse_args(argv)
    rows, reports = [], {}
    with ensure_database(load_settings()).connect() as conn:
        schema.ensure_schema(conn)
        for path in args.queries:
            queries = select_part(load_queries(path), args.part)
            base = _report(conn, queries, args.base, args.index)
            reports[f"{path.stem}:base"] = base
            rows.append(_row(path.stem, args.base or "default", base, None))
            for variant in args.variant:
                report = _report(conn, queries, variant, args.index)
                reports[f"{path.stem}:{variant}"] = report
                rows.append(_row(path.stem, variant, report, base))
    print("\n".join(rows))
    if args.out:
        args.out.write_text(json.dumps(reports))
    return 0


def _report(conn, queries, variant: str, version: str | None) -> dict:
    assignments = [item for item in variant.split(",") if item]
    return evaluate_index(conn, queries, k=20, version=version, config=SearchConfig.from_options(assignments))


def _row(name: str, variant: str, report: dict, base: dict | None) -> str:
    cells = []
    for metric in METRICS:
        value = report["overall"].get(metric)
        cell = "-" if value is None else f"{value:.3f}"
        if base is not None and value is not None:
            low, high = paired_interval(base["queries"], report["queries"], metric) or (0.0, 0.0)
            cell += f" [{low:+.3f}, {high:+.3f}]"
        cells.append(f"{metric} {cell}")
    latency = report["overall"].get("latency_ms") or {}
    cells.append(f"p50/p95 {latency.get('p50')}/{latency.get('p95')} ms")
    return f"{name:<12} n={report['overall']['n']:<4} {variant:<44} " + "  ".join(cells)


if __name__ == "__main__":
    sys.exit(main())
