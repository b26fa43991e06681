"""Searches under fire: 8 concurrent searchers while a migration builds, gates and switches a
candidate, then while the embedded database is killed (SIGKILL) and comes back.

Loopback only and bounded: a throwaway LECTIO_HOME with a few small sources (WEB chapters, a
public document, two users' private notes); it stops by itself when the migration has finished
and the searchers have run 10 s past the kill (at most --limit seconds in all).

Counted for every search: answered, failed (after the read pool's retries), a leak (a private
note shown to a principal its ACL does not name), a wrong answer (a reference lookup whose first
hit is not the verse asked for). Reported: those counts, latency p50/p95/max, and the most
connections the server saw at once. The bar is 0 failed, 0 leaks, 0 wrong.

    python benchmarks/trust_load.py [--workers 8] [--limit 600]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import tempfile
import threading
import time
from pathlib import Path

import psycopg

PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / "tests" / "fixtures"
QUERIES = [("Philippians 4:6", "phil_4_6"), ("Romans 8:28", "rom_8_28"), ("do not be anxious about anything", None),
           ("how to lead a study group", None), ("the Lord is my shepherd", None), ("propitiation and wrath", None)]
PRINCIPALS = [("public",), ("public", "user:alice"), ("public", "user:bob")]


def sources(folder: Path, context: int | None = None) -> Path:
    rules = f", rules: {{paragraph_context_sentences: {context}}}" if context is not None else ""
    path = folder / f"sources-{context}.yaml"
    path.write_text(
        "sources:\n"
        "  - {id: web, kind: scripture, format: sword-bible, module: engWEB2015eb,\n"
        f"     select: 'Philippians; Romans 8; Psalm 23', translation: WEB, acl: [public]{rules}}}\n"
        f"  - {{id: guide, kind: document, format: markdown, path: {FIXTURES / 'staff_guide.md'}, allow_outside: true, acl: [public]}}\n"
        f"  - {{id: notes-alice, kind: notes, format: notes-jsonl, path: {FIXTURES / 'notes' / 'alice.jsonl'}, allow_outside: true,\n"
        "     acl: ['user:alice']}\n"
        f"  - {{id: notes-bob, kind: notes, format: notes-jsonl, path: {FIXTURES / 'notes' / 'bob.jsonl'}, allow_outside: true,\n"
        "     acl: ['user:bob']}\n"
    )
    return path


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else 0.0


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.failed: list[str] = []
        self.leaks: list[str] = []
        self.wrong: list[str] = []
        self.versions: set[str] = set()

    def record(self, seconds, principals, query, expected, response):
        allowed = {p.split(":", 1)[1] for p in principals if p.startswith("user:")}
        with self.lock:
            self.latencies.append(seconds)
            self.versions.add(response.index_version)
            for r in response.results:
                if r.source_id.startswith("notes-") and r.source_id.removeprefix("notes-") not in allowed:
                    self.leaks.append(f"{principals} saw {r.chunk_id} for {query!r}")
            if expected and (not response.results or expected not in response.results[0].refs):
                self.wrong.append(f"{query!r}: first hit {response.results[0].chunk_id if response.results else None}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--limit", type=int, default=600, help="stop after this many seconds whatever happens")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="lectio-load-"))
    home.chmod(0o755)
    os.environ["LECTIO_HOME"] = str(home)
    os.environ.setdefault("LECTIO_CORPUS_DIR", str(PROJECT / ".lectio" / "corpus"))
    os.environ.pop("DATABASE_URL", None)
    from lectio.embedding.model import Embedder
    from lectio.index import versions
    from lectio.index.database import stop_embedded
    from lectio.index.pool import ReadPool
    from lectio.retrieval import SearchRequest, search
    from lectio.settings import load_settings
    from pipelines.runners import run_main, run_migration

    folder = home / "sources"
    folder.mkdir()
    os.environ["LECTIO_SOURCES"] = str(sources(folder))
    settings = load_settings()
    try:
        built = run_main(settings, echo=lambda _: None)
        assert built.index.get("live"), built.index
        embedder = Embedder()
        tally, stop = Tally(), threading.Event()
        pool = ReadPool(settings, size=args.workers)
        peak = {"connections": 0}

        def searcher(n: int):
            i = n
            while not stop.is_set():
                query, expected = QUERIES[i % len(QUERIES)]
                principals = PRINCIPALS[i % len(PRINCIPALS)]
                i += 1
                t0 = time.perf_counter()
                try:
                    response = pool.run(lambda conn: search(conn, SearchRequest(query, k=10, principals=principals),
                                                            embedder=embedder))
                except Exception as exc:  # counted: the bar is that none happens
                    with tally.lock:
                        tally.failed.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
                    continue
                tally.record(time.perf_counter() - t0, principals, query, expected, response)

        url = store_url(settings)

        def watch_connections():
            while not stop.is_set():
                try:
                    with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                        count = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'lectio'").fetchone()[0]
                        peak["connections"] = max(peak["connections"], count)
                except psycopg.Error:
                    pass
                time.sleep(0.5)

        threads = [threading.Thread(target=searcher, args=(n,), daemon=True) for n in range(args.workers)]
        threads.append(threading.Thread(target=watch_connections, daemon=True))
        started = time.monotonic()
        for t in threads:
            t.start()

        migration = {}

        def migrate():
            report = run_migration(
                dataclass_replace(settings, sources_file=sources(folder, context=1)),
                query_sets=[str(FIXTURES / "queries" / "migration.jsonl")], echo=lambda _: None)
            migration.update(ok=report.ok, reason=report.reason, candidate=report.candidate)

        migrator = threading.Thread(target=migrate, daemon=True)
        migrator.start()
        migrator.join(max(1, args.limit - 30))
        migrated_at = time.monotonic() - started
        # Then the database dies under the searchers, and comes back.
        pid = int((settings.pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic() - started
        time.sleep(min(10, max(0, args.limit - (time.monotonic() - started))))
        stop.set()
        for t in threads:
            t.join(30)
        pool.close()
        with psycopg.connect(url, autocommit=True) as conn:
            live = versions.live_version(conn)
        lat = [s * 1000 for s in tally.latencies]
        report = {
            "workers": args.workers,
            "seconds": round(time.monotonic() - started, 1),
            "migration_done_at_s": round(migrated_at, 1),
            "database_killed_at_s": round(killed_at, 1),
            "migration": migration or {"ok": False, "reason": "did not finish within --limit"},
            "live_after": live,
            "versions_answered_from": sorted(v for v in tally.versions if v),
            "answered": len(lat),
            "failed": len(tally.failed),
            "leaks": len(tally.leaks),
            "wrong": len(tally.wrong),
            "latency_ms": {"p50": round(statistics.median(lat), 1) if lat else None,
                           "p95": round(percentile(lat, 95), 1), "max": round(max(lat), 1) if lat else None},
            "peak_connections": peak["connections"],
            "examples": {"failed": tally.failed[:3], "leaks": tally.leaks[:3], "wrong": tally.wrong[:3]},
        }
        print(json.dumps(report, indent=2))
        return 0 if not (tally.failed or tally.leaks or tally.wrong) else 1
    finally:
        stop_embedded(settings)
        shutil.rmtree(home, ignore_errors=True)


def store_url(settings) -> str:
    from lectio.index.database import ensure_database

    return ensure_database(settings).url


def dataclass_replace(settings, **changes):
    import dataclasses

    return dataclasses.replace(settings, **changes)


if __name__ == "__main__":
    raise SystemExit(main())
