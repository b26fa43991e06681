"""Does how long a search takes tell an outsider whether private text holds a word?

The attack: ask, as public, for a word that only private chunks hold, and for a word no chunk
holds, many times over; if the first is reliably slower, the caller has learnt that some private
text says it. Each round asks both, in alternating order, so load on the machine slows the two
alike; reported is the median of the paired differences (private word minus absent word) with its
distribution-free 90% interval (the sign test), for the lexical step alone (the version's lexical
mirror, as a search takes it), for a whole lexical search, and for one with BM25 in SQL (the
fallback where a version has no mirror). An interval that holds 0 says the
difference cannot be told at this many rounds; one above 0, that it can.

The private word is the one, among words that only private chunks hold, held by the most of them
(the most work an outsider's search could be made to do for it). The absent word has its length.

    LECTIO_HOME=… python benchmarks/private_word_timing.py [--rounds 400]
"""

from __future__ import annotations

import argparse
import json
import time

from psycopg import sql

from lectio.embedding.comparison import median_interval
from lectio.index import mirror, schema, security, versions
from lectio.index.database import ensure_database
from lectio.retrieval import lexical
from lectio.retrieval.request import DEFAULT_TRANSLATION, VersionRequest
from lectio.retrieval.scope import Scope
from lectio.retrieval.filters import Filters
from lectio.retrieval import SearchConfig, SearchRequest, search
from lectio.settings import load_settings

PUBLIC = ("public",)


def private_word(conn, table: str) -> tuple[str, int]:
    """The word only private chunks hold that the most of them hold, and how many do."""
    statement = sql.SQL(
        "SELECT word, ndoc FROM ts_stat($$SELECT tsv FROM {table} WHERE NOT acl @> ARRAY['public']$$) "
        "WHERE word ~ '^[a-z]{{5,}}$' AND word NOT IN "
        "(SELECT word FROM ts_stat($$SELECT tsv FROM {table} WHERE acl @> ARRAY['public']$$)) "
        "ORDER BY ndoc DESC, word LIMIT 1").format(table=sql.Identifier(table))
    return conn.execute(statement).fetchone()


def absent_word(conn, table: str, length: int) -> str:
    """A word of `length` letters that no chunk holds."""
    for letter in "qxzjkv":
        word = (letter * 2 + "qxzv" * length)[:length]
        if not conn.execute(sql.SQL("SELECT 1 FROM {} WHERE tsv @@ to_tsquery('simple', %s) LIMIT 1").format(
                sql.Identifier(table)), (word,)).fetchone():
            return word
    raise SystemExit("no absent word of that length found")


def paired(rounds: int, ask, one: str, other: str) -> dict:
    """Median of (time for `one` minus time for `other`) in µs over paired, alternating rounds."""
    differences = []
    for i in range(rounds):
        order = (one, other) if i % 2 else (other, one)
        took = {}
        for word in order:
            start = time.perf_counter()
            ask(word)
            took[word] = time.perf_counter() - start
        differences.append((took[one] - took[other]) * 1e6)
    differences.sort()
    low, high = median_interval(differences) or (float("nan"), float("nan"))
    return {"median_us": round(differences[len(differences) // 2], 1), "interval_us": [round(low, 1), round(high, 1)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    settings = load_settings()
    database = ensure_database(settings)
    with database.connect() as conn:
        schema.ensure_schema(conn)
        info = versions.get_version(conn)
        secret, holders = private_word(conn, info.table_name)
        absent = absent_word(conn, info.table_name, len(secret))
        config = SearchConfig.from_options(["mode=lexical", "expand_lexical=false"])
        mirrored = mirror.ensure(conn, info, settings.home)
        scope = Scope(PUBLIC, Filters(), info.bm25_corpus)
        request = VersionRequest(conn, info.table_name, "", 10, scope, info.version, config, None, info.layout,
                                 mirror=mirrored)

        def step(word: str) -> None:
            with conn.transaction():
                security.act_as_reader(conn, PUBLIC)
                lexical.choose(request, DEFAULT_TRANSLATION).proposals(word, "", config)

        def whole(word: str, config: SearchConfig = config) -> None:
            search(conn, SearchRequest(word, k=10, principals=PUBLIC, config=config))

        def in_sql(word: str) -> None:
            whole(word, config.with_settings({"lexical.mirror": False}))

        for word in (secret, absent):  # warm every path before timing
            for ask in (step, whole, in_sql):
                ask(word)
        report = {"version": info.version, "mirror": mirrored is not None, "private_word_chunks": holders,
                  "word_length": len(secret), "rounds": args.rounds,
                  "lexical_step": paired(args.rounds, step, secret, absent),
                  "lexical_search": paired(args.rounds, whole, secret, absent),
                  "lexical_search_bm25_in_sql": paired(args.rounds, in_sql, secret, absent)}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
