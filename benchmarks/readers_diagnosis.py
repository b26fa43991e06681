"""Where readers' questions and typed topics are lost: before the candidate pools or inside them.

For each query set (default the readers' two: Henry's catechism questions, OpenBible.info's typed
topics) and each query shape (a question; a topic of one, two, three or more words), on a part
(default dev), searched as a caller searches (public, the query's own filters):

- pools: the share of relevant verses each retriever's list reaches at all (HNSW vectors at its
  depth, BM25, pericope titles, the other translations' BM25, the evidence the unfiltered page
  speaks for) and their union, beside recall@20 of the page the search returns. A verse in the
  union and not on the page is "ranked low"; one outside the union is "never proposed";
- evidence: of the unfiltered page the evidence step reads (its depth), how many slots go to hits
  that carry no verse references (confession and catechism prose, documents), and the share of
  queries whose evidence page holds no ref-carrying hit at all;
- the question frame: the share of the vector list's first ten hits that are themselves questions
  (a '?' in their text), and the vector pool's reach when the question's content words alone are
  embedded instead of the question as written;
- the topic path: how many questions have one or two content words, and how many of those take the
  topic path today.

    LECTIO_HOME=… python benchmarks/readers_diagnosis.py [--part dev] [--limit N] [--out FILE.json]

Prints one JSON report; every figure is a mean over the queries of its row (n).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from lectio.embedding import numerics
from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import Query, load_queries, select_part
from lectio.index import schema, security, versions
from lectio.index.database import ensure_database
from lectio.retrieval import Filters, SearchRequest, fusion, query_text, ranking, router, shape, stages, topics
from lectio.retrieval import search
from lectio.retrieval.door import _searcher
from lectio.retrieval.evidence import Evidence
from lectio.retrieval.proposals import proposals
from lectio.settings import PROJECT_ROOT, load_settings

SETS = [PROJECT_ROOT / "data" / "queries" / f"{name}.jsonl" for name in ("henry_catechism", "openbible_topics")]
_QUESTION_WORD = re.compile(r"\s*(?:what|how|why|who|whom|whose|where|when|which|should|shall|can|could|may|might|must|"
                            r"does|do|did|is|are|was|were|will|would|has|have|had|ought)\b", re.IGNORECASE)
LISTS = ("vector", "lexical", "titles", "other_translations", "evidence")


def shape_of(query: str) -> str:
    if "?" in query or _QUESTION_WORD.match(query):
        return "question"
    words = len(query.split())
    return f"topic:{min(words, 3)}{'+' if words >= 3 else ''}w"


def refs_of(conn, table: str, ranked) -> dict[str, list[str]]:
    ids = [chunk_id for chunk_id, _ in ranked or ()]
    rows = conn.execute(f'SELECT chunk_id, refs FROM "{table}" WHERE chunk_id = ANY(%s)', [ids]).fetchall()
    return {chunk_id: refs or [] for chunk_id, refs in rows}


def reach(conn, table: str, ranked, relevant: frozenset[str]) -> float:
    covered = {ref for refs in refs_of(conn, table, ranked).values() for ref in refs}
    return len(covered & relevant) / len(relevant)


def covered_refs(conn, table: str, ranked) -> set[str]:
    return {ref for refs in refs_of(conn, table, ranked).values() for ref in refs}


def diagnose(conn, query: Query, embedder: Embedder, info) -> dict:
    relevant = query.relevant_set
    request = SearchRequest(query.query, k=20, filters=Filters(**query.filters))
    meant = query_text.read(query.query)
    planned = router.plan(meant, request.config)
    searcher = replace(_searcher(conn, request, info, False, embedder, None), query=meant.text, topic=planned.topic)
    table = info.table_name
    row: dict = {"id": query.id, "shape": shape_of(query.query)}
    with conn.transaction():
        security.act_as_reader(conn, request.principals)
        found = proposals(searcher)
        lists = {"vector": found.listed("vector"), "lexical": found.listed("words"),
                 "titles": found.listed("titles"), "other_translations": found.listed("other_translations")}
        wider = replace(searcher, filters=replace(searcher.filters, given=replace(searcher.filters.given, kind=None)))
        order, _ = fusion.ranking(wider)
        page = stages.page(wider, order, searcher.config.evidence.depth)
        lists["evidence"] = ranking._spoken(searcher)[0] if Evidence.asked(searcher) else None
        pool: set[str] = set()
        for name in LISTS:
            refs = covered_refs(conn, table, lists[name]) if lists[name] else set()
            row[f"reach:{name}"] = len(refs & relevant) / len(relevant)
            pool |= refs
        row["reach:union"] = len(pool & relevant) / len(relevant)
        row["evidence_slots_without_refs"] = sum(1 for hit in page if not hit.refs)
        row["evidence_page_has_no_refs"] = float(all(not hit.refs for hit in page))
        near_ids = [chunk_id for chunk_id, _ in (found.listed("vector") or [])[:10]]
        texts = dict(conn.execute(f'SELECT chunk_id, text FROM "{table}" WHERE chunk_id = ANY(%s)', [near_ids]).fetchall())
        row["vector_top10_questions"] = sum("?" in texts.get(c, "") for c in near_ids) / max(len(near_ids), 1)
        words = " ".join(shape.content_words(meant.text))
        if words and words != meant.text:
            bare = proposals(replace(searcher, query=words, config=searcher.config.but(["mode=vector"])))
            row["reach:vector_content_words"] = reach(conn, table, bare.listed("vector"), relevant)
        else:
            row["reach:vector_content_words"] = row["reach:vector"]
        content = shape.content_words(meant.text)
        row["short_question"] = float(row["shape"] == "question" and 0 < len(content) <= 2)
        row["topic_path"] = float(topics.takes_topic_path(searcher))
    results = search(conn, request, embedder=embedder).results
    on_page = {ref for result in results for ref in result.refs or ()}
    row["recall@20"] = len(on_page & relevant) / len(relevant)
    row["ranked_low"] = len((pool - on_page) & relevant) / len(relevant)
    row["never_proposed"] = len(relevant - pool - on_page) / len(relevant)
    return row


def summarise(rows: list[dict]) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[row["shape"]].append(row)
        groups["all"].append(row)
    keys = [k for k in rows[0] if k not in ("id", "shape")] if rows else []
    return {name: {"n": len(group), **{k: round(sum(r[k] for r in group) / len(group), 4) for k in keys}}
            for name, group in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", type=Path, nargs="*", default=SETS)
    parser.add_argument("--part", default="dev", choices=["dev", "test", "all"])
    parser.add_argument("--limit", type=int, help="the first N queries of each set's part only")
    parser.add_argument("--out", type=Path, help="also write every query's row here (JSON)")
    args = parser.parse_args(argv)
    started, report, every = time.monotonic(), {}, {}
    with ensure_database(load_settings()).connect() as conn:
        schema.ensure_schema(conn)
        info = versions.get_version(conn, None)
        embedder = Embedder.for_queries_of(info.model_id)
        for path in args.queries:
            queries = select_part(load_queries(path), args.part)[: args.limit]
            rows = [diagnose(conn, q, embedder, info) for q in queries]
            report[path.stem] = summarise(rows)
            every[path.stem] = rows
    out = {"cpu": numerics.cpu_model(), "version": info.version, "part": args.part,
           "seconds": round(time.monotonic() - started, 1), "sets": report}
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps({**out, "queries": every}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
