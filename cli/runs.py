"""`lectio run` and `lectio migrate`: the main job, and a candidate index gated before it goes live,
each executed in this process through pipelines.runners (imported by the command, not before)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys

from lectio.retrieval import MODES, Mode
from lectio.settings import load_settings, remember_sources


def migrate_options(migrate: argparse.ArgumentParser) -> None:
    migrate.add_argument("--sources", help="sources file with the new rules (default data/sources.yaml)")
    migrate.add_argument("--embedder", metavar="MODEL",
                         help="embed the candidate with this model: an adapted one's id (lectio model show), "
                              "'latest' (the newest adapted here) or 'base' (the packaged model); the home keeps "
                              "it when the gate switches, which needs no guarded metric (recall@20, MRR, nDCG@10, "
                              "budget recall) to drop beyond noise")
    migrate.add_argument("--queries", nargs="+", metavar="Q.jsonl",
                         help="labelled query sets to gate on, each FILE (every query) or FILE:dev / FILE:test (default the dev parts of data/queries/theology, henry_catechism and openbible_topics)")
    migrate.add_argument("--tolerance", type=float, help="largest recall@20 drop allowed (default 0.03)")
    migrate.add_argument("--tolerance-for", action="append", default=[], metavar="METRIC=DROP",
                         help="guard another metric, or 'METRIC=off' to stop guarding it (default guards: "
                              "recall@20=0.03, budget_recall@1000=0.05)")
    migrate.add_argument("--keep", type=int, default=3,
                         help="other versions kept besides the live one and the rollback target (default 3)")
    migrate.add_argument("--k", type=int, default=20)
    migrate.add_argument("--mode", choices=MODES, default=Mode.HYBRID)


def run(args) -> int:
    from pipelines.runners import Interrupted, run_main

    if not args.json:
        logging.basicConfig(format="      %(message)s")
        logging.getLogger("lectio").setLevel(logging.INFO)
    settings = load_settings()
    try:
        report = run_main(settings, echo=(lambda _: None) if args.json else print, switch_live=not args.candidate)
        remember_sources(settings)
    except Interrupted as exc:
        print(f"lectio run: interrupted, {exc}", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
        # The text report lists failed sources on stdout; beside JSON, a script's log sees them here.
        for outcome in report.failed:
            print(f"lectio run: source {outcome.source_id} failed: {outcome.error}", file=sys.stderr)
    return 0 if report.ok else 1


def migrate(args) -> int:
    from lectio.evaluation.migration_gate import DEFAULT_TOLERANCES, MODEL_TOLERANCES, GateResult, parse_tolerances
    from lectio.evaluation.migration_report import describe
    from pipelines.runners import Interrupted, run_migration

    # A migration to another model is held to no drop beyond noise; a migration of rules to DEFAULT_TOLERANCES.
    tolerances = parse_tolerances(args.tolerance, args.tolerance_for,
                                  MODEL_TOLERANCES if args.embedder else DEFAULT_TOLERANCES)
    if not args.json:
        logging.basicConfig(format="      %(message)s")
        logging.getLogger("lectio").setLevel(logging.INFO)
    try:
        with _embedding_with(args.embedder):
            report = run_migration(load_settings(), query_sets=args.queries, tolerances=tolerances, keep=args.keep,
                                   k=args.k, mode=args.mode, echo=(lambda _: None) if args.json else print)
    except Interrupted as exc:
        print(f"lectio migrate: interrupted, {exc}; the live index is unchanged", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(report.to_json(), indent=2, default=str))
    else:
        print(describe(GateResult.from_json(report.gate)) if report.gate else f"REFUSED: {report.reason}")
        e = report.embeddings
        print(f"{e['embedded']:,} chunks embedded, {e['reused']:,} reused from the cache; {report.seconds:.1f}s")
    return 0 if report.ok else 1


@contextlib.contextmanager
def _embedding_with(name: str | None):
    """The candidate of this migration embeds with `name` (None: the home's model): the setting
    every step of the build reads, for the migration's length only."""
    from lectio.embedding.packaged import bounded_name
    from lectio.training.embedder.registry import chosen

    if name is None:
        yield
        return
    before = os.environ.get("LECTIO_EMBED_MODEL")
    os.environ["LECTIO_EMBED_MODEL"] = chosen(load_settings().home, bounded_name(name, "--embedder"))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LECTIO_EMBED_MODEL", None)
        else:
            os.environ["LECTIO_EMBED_MODEL"] = before
