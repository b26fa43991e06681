"""Golden searches: every answer of a fixed battery written down, so a change meant to move no
result (a refactoring) can be shown to move none, byte for byte.

The battery: every query set's dev part in the three modes (each query with its own filters and
principals), the hybrid again narrowed to scripture on one connection and on two (the service's
way, where the evidence's unfiltered ranking runs beside the filtered one), references, and word
studies of every shape (`--per-set N` keeps each set's first N dev queries; `--set NAME=VALUE`
searches every ranked query under those settings too, to cover steps off by default). Each answer is written as one JSON line (the response as a caller gets
it, keys sorted); --compare names the first answers that differ from an earlier file.

    LECTIO_HOME=… python benchmarks/golden_searches.py --write /tmp/golden-before.jsonl
    LECTIO_HOME=… python benchmarks/golden_searches.py --compare /tmp/golden-before.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import load_queries, select_part
from lectio.index import schema, versions
from lectio.index.database import ensure_database
from lectio.retrieval.filters import Filters
from lectio.retrieval.modes import MODES
from lectio.retrieval import DEFAULT_PRINCIPALS, SearchConfig, SearchRequest, search
from lectio.settings import load_settings

SETS = Path(__file__).resolve().parents[1] / "data" / "queries"
REFERENCES = ("John 3:16", "Romans 8:28-30", "Genesis 1", "Ps 23", "1 Cor 13:4-7", "Jude 3")
WORD_STUDIES = ("G26", "H2617", "agape", "hesed", "ἀγάπη", "the Greek word for love", "the Hebrew word for mercy",
                "G26 in John's letters", "the Greek word for grace")


def battery(per_set: int | None = None, assignments: tuple[str, ...] = ()) -> list[tuple[str, SearchRequest, bool]]:
    """(label, request, on two connections) for every search the battery makes: each set's first
    `per_set` dev queries (all where None), ranked under the NAME=VALUE `assignments`."""
    found = []
    config = SearchConfig.from_options(assignments)
    for path in sorted(SETS.glob("*.jsonl")):
        for q in select_part(load_queries(path), "dev")[:per_set]:
            principals, filters = tuple(q.principals or DEFAULT_PRINCIPALS), Filters(**(q.filters or {}))
            for mode in MODES:
                request = SearchRequest(q.query, k=20, principals=principals, filters=filters,
                                        config=config.but([f"mode={mode}"]))
                found.append((f"{path.stem}/{q.id}/{mode}", request, False))
            scripture = SearchRequest(q.query, k=20, principals=principals, filters=Filters(kind="scripture"),
                                      config=config)
            found += [(f"{path.stem}/{q.id}/scripture", scripture, False),
                      (f"{path.stem}/{q.id}/scripture-two-connections", scripture, True)]
    found += [(f"reference/{text}", SearchRequest(text, k=20), False) for text in REFERENCES]
    found += [(f"word-study/{text}", SearchRequest(text, k=20), False) for text in WORD_STUDIES]
    return found


def answers(database, per_set: int | None = None, assignments: tuple[str, ...] = ()) -> dict[str, str]:
    out = {}
    with database.connect() as conn, database.connect() as second:
        schema.ensure_schema(conn)
        embedder = Embedder.for_queries_of(versions.get_version(conn, None).model_id)
        for label, request, two in battery(per_set, assignments):
            response = search(conn, request, embedder=embedder, vector_conn=second if two else None)
            out[label] = json.dumps(response.to_json(), sort_keys=True, ensure_ascii=False)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", type=Path, help="write the battery's answers here")
    action.add_argument("--compare", type=Path, help="compare the battery's answers with this file")
    parser.add_argument("--per-set", type=int, default=None, help="each set's first N dev queries only")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="NAME=VALUE",
                        help="a search setting every ranked query is searched under (repeatable)")
    args = parser.parse_args()
    found = answers(ensure_database(load_settings()), args.per_set, tuple(args.assignments))
    if args.write:
        args.write.write_text("".join(json.dumps({"label": k, "answer": v}, ensure_ascii=False) + "\n"
                                      for k, v in found.items()))
        print(f"{len(found)} answers written to {args.write}")
        return 0
    before = {row["label"]: row["answer"] for row in map(json.loads, args.compare.read_text().splitlines())}
    differ = [label for label in before if found.get(label) != before[label]]
    missing = sorted(set(found) ^ set(before))
    print(f"{len(before)} answers compared: {len(differ)} differ, {len(missing)} only on one side")
    for label in (differ + missing)[:20]:
        print(f"  {label}")
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
