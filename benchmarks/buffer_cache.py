"""The embedded server's buffer cache against PostgreSQL's default, on the same index version.

Baseline, measured in the same run: shared_buffers = 128 MB (PostgreSQL's default, what the
embedded server had before lectio sized it). Against it: the size lectio now gives the server
(`lectio.index.database.shared_buffers_mb`, from this machine's memory). The two alternate over
`--rounds` rounds, the server restarted into each; every round first searches every query once
untimed (both settings then read warm pages: PostgreSQL's own buffers or the kernel's page cache),
then times the HNSW step alone (public's view, default filters) and a whole hybrid search (query
embedding included, the vector side on a second connection, as the service runs it). Reported:
p50/p95 of each per setting and the default's p95 over the sized one's.

Restarts the home's embedded server: run it when nothing else uses the home.

    LECTIO_HOME=… python benchmarks/buffer_cache.py [--queries data/queries/theology.jsonl] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import time

from lectio.embedding.model import Embedder
from lectio.evaluation.querysets import load_queries
from lectio.index import mirror, security, versions
from lectio.index.database import ensure_database, set_embedded_buffers, shared_buffers_mb
from lectio.retrieval.vector import vector_candidates
from lectio.retrieval.config import SearchConfig
from lectio.retrieval import DEFAULT_PRINCIPALS, DEFAULT_TRANSLATION, SearchRequest, search
from lectio.settings import load_settings
from search_latency import is_reference, ms, public_scope  # run from benchmarks/, beside it

DEFAULT_MB = 128


def one_round(database, queries, vectors, embedder) -> tuple[list[float], list[float]]:
    hnsw, hybrid = [], []
    with database.connect() as conn, database.connect() as side:
        version = versions.get_version(conn, None)
        filters = public_scope(version)
        where, params = filters.where(DEFAULT_TRANSLATION)
        config = SearchConfig()
        mirror.ensure(conn, version)

        def hybrid_search(query):
            return search(conn, SearchRequest(query, k=20, version=version.version), embedder=embedder,
                          vector_conn=side)

        for query in queries:  # warm whichever cache this setting reads from
            hybrid_search(query)
        for query, vector in zip(queries, vectors):
            with conn.transaction():
                security.act_as_reader(conn, DEFAULT_PRINCIPALS)
                started = time.perf_counter()
                vector_candidates(conn, version.table_name, vector, where, params, config)
                hnsw.append(time.perf_counter() - started)
            started = time.perf_counter()
            hybrid_search(query)
            hybrid.append(time.perf_counter() - started)
    return hnsw, hybrid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="data/queries/theology.jsonl")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    settings = load_settings()
    database = ensure_database(settings)
    queries = [q.query for q in load_queries(args.queries) if not is_reference(q.query)]
    embedder = Embedder()
    vectors = embedder.encode(queries)
    sized = shared_buffers_mb()
    times: dict[int, dict[str, list[float]]] = {DEFAULT_MB: {"hnsw": [], "hybrid": []}, sized: {"hnsw": [], "hybrid": []}}
    try:
        for round_ in range(args.rounds):
            # Each setting goes first in every other round.
            for megabytes in ([DEFAULT_MB, sized] if round_ % 2 == 0 else [sized, DEFAULT_MB]):
                set_embedded_buffers(settings.home, megabytes)
                hnsw, hybrid = one_round(database, queries, vectors, embedder)
                times[megabytes]["hnsw"] += hnsw
                times[megabytes]["hybrid"] += hybrid
    finally:
        set_embedded_buffers(settings.home, sized)
    report = {f"{mb}MB": {stage: {"p50_ms": ms(values, 50), "p95_ms": ms(values, 95)}
                          for stage, values in stages.items()} for mb, stages in times.items()}
    for stage in ("hnsw", "hybrid"):
        report[f"{stage}_p95_default_over_sized"] = round(
            report[f"{DEFAULT_MB}MB"][stage]["p95_ms"] / report[f"{sized}MB"][stage]["p95_ms"], 2)
    report["queries"], report["rounds"] = len(queries), args.rounds
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
