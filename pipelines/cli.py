"""The `lectio` command. Dagster is imported only by the commands that run Dagster."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from lectio.index import locks, revocation, schema, versions
from lectio.index.database import disk_full, ensure_database, full_disk_line, stop_embedded
from lectio.settings import PROJECT_ROOT, load_settings, remember_sources
from lectio.retrieval.filters import FILTER_HELP, Filters
from lectio.retrieval.options import OPTION_HELP, SearchOptions
from lectio.retrieval.modes import MODES, Mode
from lectio.sources import SourceError, check_principals, load_sources


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Files lectio writes (stored outputs, logs, alert logs) are its user's alone.
    os.umask(0o077)
    if getattr(args, "sources", None):
        os.environ["LECTIO_SOURCES"] = str(Path(args.sources).resolve())
    try:
        return args.handler(args)
    except Exception as exc:
        # A full disk reaches here wrapped by whoever met it (Dagster's run storage, SQLAlchemy),
        # or as the OSError of a home's file: one line naming it and where to free space. Nothing
        # is switched live by a failed run.
        if (said := disk_full(exc)) is not None:
            print(f"lectio {args.command}: {full_disk_line(said, load_settings().home)}; the live index was not "
                  "changed", file=sys.stderr)
        elif isinstance(exc, (SourceError, ValueError, OSError, locks.WriterBusy)):
            # Bad input or a refused change: one line naming what was wrong, no traceback.
            print(f"lectio {args.command}: {exc}", file=sys.stderr)
        else:
            raise
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lectio", description="Permission-aware retrieval index for theology texts.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    def command(name, handler, help):
        sub = commands.add_parser(name, help=help)
        sub.add_argument("--json", action="store_true", help="machine-readable output")
        sub.set_defaults(handler=handler, command=name)
        return sub

    run = command("run", _run, "materialise every asset: the main job")
    run.add_argument("--sources", help="sources file (default data/sources.yaml)")
    run.add_argument("--candidate", action="store_true", help="build the index version but leave the live one")

    dev = command("dev", _dev, "start the database and the Dagster UI")
    dev.add_argument("--sources", help="sources file (default data/sources.yaml)")
    dev.add_argument("--port", type=int, default=3000)

    _search_options(command("search", _search, "search the live index"))

    serve = command("serve", _serve, "the HTTP search service: GET /search, /health, /ready, /metrics, /docs")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--pool", type=int, default=8,
                       help="database connections of each worker (default 8; twice that at most: searches take two)")
    serve.add_argument("--workers", type=int, default=1,
                       help="processes answering on the one port (default 1); each loads its own model, lexical "
                            "mirror lists and --pool; /metrics adds up all of them")

    _eval_options(command("eval", _eval, "score an index version against a labelled query set"))

    index = command("index", _index, "list index versions, switch or roll back the live one, prune old ones")
    index.add_argument("action", choices=["list", "switch", "rollback", "prune", "audit"],
                       help="audit: judge every version against the sources file (revoke what shows too much)")
    index.add_argument("version", nargs="?")
    index.add_argument("--keep", type=int, default=3,
                       help="prune: other versions kept besides the live one and the rollback target (default 3)")

    _migrate_options(command("migrate", _migrate, "build a candidate index beside the live one, gate it on "
                             "labelled queries, switch it in only if it is no worse"))

    token = command("token", _token, "print a signed principals token for reading as lectio_reader over "
                    "a connection of your own (bind it as a parameter: set_config('lectio.principals', %%s, true) "
                    "in each transaction)")
    token.add_argument("--principal", action="append", required=True, help="principal (repeatable)")
    token.add_argument("--seconds", type=int, default=300, help="lifetime of the token (default 300)")

    command("down", _down, "stop the embedded database of LECTIO_HOME")

    _model_options(command("model", _model, "the embedding runtime this machine measured, and the rerankers trained here"))

    dagster = commands.add_parser(
        "dagster", help="run the dagster CLI against this LECTIO_HOME (e.g. `lectio dagster definitions validate`)"
    )
    dagster.add_argument("dagster_args", nargs=argparse.REMAINDER)
    dagster.set_defaults(handler=_dagster, command="dagster")
    return parser


def _model_options(model: argparse.ArgumentParser) -> None:
    model.add_argument("action", choices=["show", "measure", "train", "use", "adapt", "rank"],
                       help="measure: measure this machine again; train: train a reranker on the index's training "
                            "pairs, then gate it; use: gate a trained reranker (or 'none') for this home's searches; "
                            "adapt: fine-tune the embedding model on the same pairs (`lectio migrate --embedder` "
                            "moves the index to it); rank: train the learned ranker on the query sets' dev parts, "
                            "cross-validated by query (`--set stages.learned_rank.model=ID` searches with it)")
    model.add_argument("reranker", nargs="?", help="use: a trained reranker's id, 'latest', or 'none'")
    model.add_argument("--queries", nargs="+", help="train, use: the query sets the gate scores (default: every set "
                       "under data/queries)")
    model.add_argument("--part", choices=["dev", "test", "all"], default="dev",
                       help="train, use: the part of each set the gate scores (default dev: defaults are chosen on it)")
    model.add_argument("--force", action="store_true", help="use: switch even if the gate refuses")
    model.add_argument("--no-gate", action="store_true", help="train, rank: train only; `lectio model use` gates later")
    model.add_argument("--index", help="train: the index version whose corpus makes the pairs (default: the live one)")
    model.add_argument("--steps", type=int, help="train, adapt: training steps (default 600; adapt 400)")
    model.add_argument("--layers", type=int, help="train: MiniLM layers the reranker keeps (default 3)")
    model.add_argument("--depth", type=int, default=100, help="rank: the first fused hits it orders again (default 100)")
    model.add_argument("--limit", type=int, help="rank: at most this many dev queries of each set (default: all)")
    model.add_argument("--ranker", action="store_true",
                       help="use: 'latest' or 'none' of the learned ranker (a ranker's own id says so itself)")


def _search_options(search: argparse.ArgumentParser) -> None:
    search.add_argument("query")
    search.add_argument("--principal", action="append", help="caller principal (repeatable); default public")
    for name, help in FILTER_HELP.items():
        search.add_argument(f"--{name}", help=help)
    search.add_argument("--index", help="index version (default: the live one)")
    # The same options, defaults and help as the service's query parameters (SearchOptions).
    defaults = SearchOptions()
    search.add_argument("--k", type=int, default=defaults.k, help=OPTION_HELP["k"])
    search.add_argument("--mode", choices=MODES, default=defaults.mode, help=OPTION_HELP["mode"])
    search.add_argument("--parents", action="store_true", help=OPTION_HELP["parents"])
    for name, metavar in (("xrefs", "WEIGHT"), ("prominence", "WEIGHT"), ("mmr", "LAMBDA")):
        search.add_argument(f"--{name}", type=float, metavar=metavar, help=OPTION_HELP[name])
    search.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="settings",
                        help="a search setting, as for `lectio eval --set` (e.g. stages.rerank.model=latest)")
    search.add_argument("--server", metavar="URL", help="ask a running `lectio serve` (e.g. http://127.0.0.1:8000) "
                        "instead of searching here; principals then come from --token")
    search.add_argument("--token", help="with --server: a JWT whose 'principals' claim says who is asking "
                        "(default: $LECTIO_TOKEN; none: public)")


def _eval_options(evaluate: argparse.ArgumentParser) -> None:
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


def _migrate_options(migrate: argparse.ArgumentParser) -> None:
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


def _print(args, payload: dict, text: str) -> None:
    print(json.dumps(payload, indent=2, default=str) if args.json else text)


def _run(args) -> int:
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


def _dagster_env() -> dict[str, str]:
    from pipelines.home import prepare_dagster_env

    settings = load_settings()
    return {**os.environ, **prepare_dagster_env(settings, ensure_database(settings))}


# The dagster CLI of this Python, as Dagster itself starts it: `.venv/bin/lectio dagster …` and
# `lectio dev` work without the venv's bin on PATH.
DAGSTER_CLI = [sys.executable, "-m", "dagster"]
# `dagster dev` warns on every start that the `dg` CLI supersedes it; lectio's project is not a
# `dg` project. That one notice is hidden, in every process of `lectio dev`; no other warning is.
DEV_WARNINGS = "ignore:Function `dev_command` is superseded:FutureWarning"


def _dagster(args) -> int:
    """The dagster CLI with DAGSTER_HOME and storage of this home, run from the project root."""
    extra = args.dagster_args
    if extra[:2] == ["definitions", "validate"] and "-w" not in extra and "-m" not in extra:
        extra = [*extra, "-w", str(PROJECT_ROOT / "workspace.yaml")]
    return subprocess.run([*DAGSTER_CLI, *extra], cwd=PROJECT_ROOT, env=_dagster_env()).returncode


def _dev(args) -> int:
    env = _dagster_env()

    def default_signals():
        # A process started in the background inherits ignored SIGINT/SIGTERM; dagster dev
        # then cannot be stopped. Give it the default handlers back.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    cmd = [*DAGSTER_CLI, "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(args.port)]
    env = {**ui_url_env(env, args.port),
           "PYTHONWARNINGS": ",".join(filter(None, [env.get("PYTHONWARNINGS"), DEV_WARNINGS]))}
    print(f"Dagster UI on http://127.0.0.1:{args.port} (Ctrl-C stops it; `lectio down` stops the database)")
    # Started in DAGSTER_HOME: from the project root `dagster dev` finds the project's dagster.yaml
    # there and warns it "will not be used" (the home holds its copy, pipelines/home.py).
    child = subprocess.Popen(cmd, cwd=env["DAGSTER_HOME"], env=env, preexec_fn=default_signals)

    def forward(signum, _frame):
        child.send_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return child.wait()


def ui_url_env(env: dict, port: int) -> dict:
    """The alerts' links point at the UI this command serves (`--port`), unless LECTIO_UI_URL
    says where the team reaches it (behind a proxy, on another host)."""
    return env if env.get("LECTIO_UI_URL") else {**env, "LECTIO_UI_URL": f"http://127.0.0.1:{port}"}


def _search(args) -> int:
    if args.server:
        return _search_server(args)
    from lectio.retrieval.search import DEFAULT_PRINCIPALS, SearchRequest, search

    settings = load_settings()
    filters, options = _filters(args), _options(args)
    principals = check_principals(args.principal or DEFAULT_PRINCIPALS)
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        if args.index:
            revocation.refuse_unservable(conn, args.index)
        response = search(conn, SearchRequest(args.query, k=options.k, principals=principals, version=args.index,
                                              filters=filters, config=options.config(args.settings)))
    return _print_results(args, response.to_json())


def _print_results(args, payload: dict) -> int:
    lines = [payload["message"]] if payload.get("message") else []
    for r in payload["results"]:
        refs = ", ".join(r["refs"][:3]) + (" …" if len(r["refs"]) > 3 else "")
        lines.append(f"{r['rank']:>2}. {r['chunk_id']}  [{refs}]  score {r['score']:.3f}\n    {r['text'][:200]}")
    _print(args, payload, "\n".join(lines) or "no results")
    return 0 if payload["results"] else 1


def _filters(args) -> Filters:
    filters = Filters.of(vars(args))
    if problem := filters.problem():
        raise ValueError(f"--{problem}")
    return filters


def _options(args) -> SearchOptions:
    options = SearchOptions.of(vars(args))
    if problem := options.problem():
        raise ValueError(f"--{problem}")
    return options


def _search_server(args) -> int:
    """The same search through a running service: no model or database in this process."""
    from lectio.serving.client import search_remote

    if args.principal:
        raise ValueError("--principal is not sent to a server: principals come from --token")
    if args.settings:
        raise ValueError("--set is not sent to a server: the service searches with its own settings")
    payload = search_remote(args.server, args.query, _options(args), _filters(args),
                            token=args.token or os.environ.get("LECTIO_TOKEN"))
    return _print_results(args, payload)


def _serve(args) -> int:
    import uvicorn

    from lectio.embedding import model
    from lectio.serving import app
    from lectio.serving.auth import Verifier
    from lectio.settings import auth_settings

    for option in ("workers", "pool"):
        if getattr(args, option) < 1:
            raise ValueError(f"--{option} must be at least 1, not {getattr(args, option)}")
    model.check_settings()  # a bad model setting is one line here, not a traceback from the server's start
    verifier = Verifier.of(auth_settings())
    if args.workers == 1:
        uvicorn.run(app.create_app(load_settings(), verifier, pool_size=args.pool), host=args.host, port=args.port,
                    **app.SERVER_OPTIONS)
        return 0
    return _serve_workers(args)


def _serve_workers(args) -> int:
    """uvicorn's supervisor and `args.workers` processes it starts, sharing the port. Every setting
    was checked above, in this process, so a bad one is one line and no worker starts; each worker
    reads the same environment (lectio.serving.app.from_environment)."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from lectio.serving import app

    settings = load_settings()
    app.build_mirror_first(settings)
    config = uvicorn.Config(app.WORKER_APP, factory=True, workers=args.workers, host=args.host, port=args.port,
                            timeout_worker_healthcheck=app.WORKER_PING_SECONDS, **app.SERVER_OPTIONS)
    with app.metrics_folder() as shared:
        os.environ.update({app.POOL_ENV: str(args.pool), app.MULTIPROCESS_ENV: shared,
                           app.SUPERVISOR_ENV: str(os.getpid())})
        # uvicorn's supervisor, not uvicorn.run: run() returns as if all went well when the
        # supervisor stopped because a worker could not start, and a caller must be told.
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
    if any(worker.exitcode == STARTUP_FAILURE for worker in supervisor.processes):
        print("lectio serve: a worker failed to start (its error is above); the service stopped", file=sys.stderr)
        return 1
    return 0


def _eval(args) -> int:
    from lectio.evaluation.metrics import evaluate_index
    from lectio.evaluation.querysets import load_queries, select_part
    from lectio.retrieval.config import SearchConfig

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
    _print(args, report, text)
    return 0


def _baselines_table(lectio: dict, baselines: dict) -> str:
    metrics = ("recall@20", "mrr", "precision@5", "ndcg@10", "budget_recall@1000")
    rows = [("system", *metrics), *[(name, *(overall.get(m) for m in metrics))
                                    for name, overall in {"lectio": lectio, **baselines}.items()]]
    return "\n".join(f"{r[0]:<16}" + "".join(f"{'-' if v is None else v:>20}" for v in r[1:]) for r in rows)


def _index(args) -> int:
    settings = load_settings()
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        if args.action == "switch":
            if not args.version:
                raise ValueError("switch needs a VERSION")
            with locks.writer_lock(conn, "this switch"):
                revocation.switch_judged(conn, args.version, load_sources(settings.sources_file))
        elif args.action == "rollback":
            previous = versions.previous_version(conn)
            if not previous:
                print("no previous version to roll back to", file=sys.stderr)
                return 1
            with locks.writer_lock(conn, "this rollback"):
                revocation.switch_judged(conn, previous, load_sources(settings.sources_file))
        elif args.action == "prune":
            from lectio.index.retention import retain

            with locks.writer_lock(conn, "this prune"):  # never drop a candidate a migration is about to gate
                dropped = retain(conn, args.keep)
            if not args.json:
                print(f"dropped {', '.join(dropped)}" if dropped else "nothing to drop")
        elif args.action == "audit":
            with locks.writer_lock(conn, "this audit"):
                judgement = revocation.judge(conn, revocation.allowed_acls(load_sources(settings.sources_file)))
            if not args.json:
                print(judgement.describe() or "every version shows only what the sources file allows")
        versions.mark_abandoned_builds(conn)  # a build whose builder is gone is listed as abandoned
        listed = versions.list_versions(conn)
    pruned = {"dropped": dropped} if args.action == "prune" else {}
    if args.action == "audit":
        pruned = {"revoked": judgement.revoked, "reinstated": judgement.reinstated}
    payload = {
        "versions": [
            {"version": v.version, "ruleset": v.ruleset, "model": v.model_id, "rows": v.rows, "metrics": v.metrics,
             "live": v.live, "status": v.status, "sources": v.sources, "revoked_reason": v.revoked_reason}
            for v in listed
        ],
        **pruned,
    }
    # Why a version is revoked is told here, to the operator, and never to a search's caller.
    text = "\n".join(
        f"{'*' if v.live else ' '} {v.version:<6} {v.status:<9} {v.rows or 0:>8,} rows  {v.model_id}  {v.ruleset}"
        + _metrics_line(v.metrics) + (f"\n           revoked: {v.revoked_reason}" if v.revoked_reason else "")
        for v in listed
    )
    _print(args, payload, text or "no index versions yet")
    return 0


def _model(args) -> int:
    from pipelines.model_command import model_command

    return model_command(args)


def _token(args) -> int:
    from lectio.index import security

    settings = load_settings()
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        token = security.sign(conn, args.principal, args.seconds)
    _print(args, {"token": token, "principals": args.principal, "seconds": args.seconds}, token)
    return 0


def _metrics_line(metrics: dict) -> str:
    """A version's stored scores and gate verdict, indented under its line."""
    parts = []
    for name, overall in (metrics or {}).get("evaluation", {}).get("query_sets", {}).items():
        scores = ", ".join(f"{m} {overall[m]:.3f}" for m in ("recall@20", "mrr", "budget_recall@1000")
                           if overall.get(m) is not None)
        parts.append(f"{name} (n={overall.get('n')}): {scores}")
    gate = (metrics or {}).get("gate")
    if gate:
        parts.append(f"gate vs {gate.get('against')}: {gate.get('decision')}")
    return "".join(f"\n           {p}" for p in parts)


def _migrate(args) -> int:
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
    from lectio.training.embedder import chosen

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


def _down(args) -> int:
    stopped = stop_embedded(load_settings())
    _print(args, {"stopped": stopped}, "database stopped" if stopped else "no embedded database running")
    return 0


if __name__ == "__main__":
    sys.exit(main())
