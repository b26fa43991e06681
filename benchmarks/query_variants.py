"""Every labelled set asked in the surface forms readers type (lectio.evaluation.query_forms): as
written, lower case, Title Case, wrapped in a question, each bare and with the filter its relevant
verses satisfy. Per set and metric: each form's value, its gap to the best form, the spread
across forms, and the paired 95 % interval against the as-written form (a filtered form also
against the same surface unfiltered). Run on dev parts while building; report test parts once.

    python benchmarks/query_variants.py --part dev
    python benchmarks/query_variants.py data/queries/naves.jsonl --part dev --form lower --form lower+kind
    python benchmarks/query_variants.py --part test --out variants-test.json

Default sets: every data/queries/*.jsonl. `--set FIELD=VALUE` changes a search setting for every
form (`lectio eval --set`'s fields), to compare a change on the dev parts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lectio.evaluation.metrics import evaluate_index
from lectio.evaluation.query_forms import BASE, FORMS, METRICS, compare, forms_of
from lectio.evaluation.querysets import load_queries, select_part
from lectio.index import schema, versions
from lectio.index.database import ensure_database
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.modes import MODES, Mode
from lectio.settings import load_settings

SETS = Path(__file__).resolve().parent.parent / "data" / "queries"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", type=Path, nargs="*", help="JSONL sets (default: data/queries/*.jsonl)")
    parser.add_argument("--part", choices=["dev", "test"], default="dev")
    parser.add_argument("--index", help="version (default: live)")
    parser.add_argument("--mode", choices=MODES, default=Mode.HYBRID)
    parser.add_argument("--form", action="append", choices=list(FORMS), dest="forms",
                        help=f"a form to ask (repeatable; default all; {BASE} is always asked)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", dest="settings")
    parser.add_argument("--out", type=Path, help="also write every form's report and the comparison here (JSON)")
    args = parser.parse_args(argv)
    paths = args.queries or sorted(SETS.glob("*.jsonl"))
    config = SearchConfig.from_options(args.settings, mode=args.mode)
    results = {}
    with ensure_database(load_settings()).connect() as conn:
        schema.ensure_schema(conn)
        if (args.index or versions.live_version(conn)) is None:
            raise SystemExit("query_variants: no live index yet: run `lectio run` first, or name one with --index")
        for path in paths:
            queries = select_part(load_queries(path), args.part)
            reports = {form: evaluate_index(conn, shaped, k=20, version=args.index, config=config)
                       for form, shaped in forms_of(queries, args.forms).items()}
            table = compare(reports)
            print(_table(f"{path.stem} ({args.part}, n={len(queries)})", table))
            results[path.stem] = {"part": args.part, "comparison": table, "reports": reports}
    if args.out:
        args.out.write_text(json.dumps(results))
    return 0


def _table(title: str, table: dict) -> str:
    lines = [title]
    for metric in METRICS:
        lines.append(f"  {metric}  (spread across forms {_number(table[metric]['spread'])})")
        for form, row in table[metric]["forms"].items():
            lines.append(f"    {form:<22} {_number(row['value']):>6}  below best {_number(row['below_best']):>6}"
                         f"  vs {BASE} {_interval(row['vs_as_written']):<18}  vs unfiltered {_interval(row['vs_unfiltered'])}")
    return "\n".join(lines)


def _number(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(interval) -> str:
    return "-" if not interval else f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"


if __name__ == "__main__":
    sys.exit(main())
