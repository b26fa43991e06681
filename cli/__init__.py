"""The `lectio` command: its parser and `main`, a module per command (or pair of commands). Dagster
is imported only by the commands that run Dagster (run, migrate, dev, dagster), inside them: the
searching, serving, scoring and index commands start without it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cli.dev import dagster_command, dev, down
from cli.evaluate import eval_options, evaluate
from cli.index import index, token
from cli.model import model_command, model_options
from cli.runs import migrate, migrate_options, run
from cli.search import search, search_options
from cli.serve import serve
from lectio.index import locks
from lectio.index.database import disk_full, full_disk_line
from lectio.settings import load_settings
from lectio.sources import SourceError


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

    run_parser = command("run", run, "materialise every asset: the main job")
    run_parser.add_argument("--sources", help="sources file (default data/sources.yaml)")
    run_parser.add_argument("--candidate", action="store_true", help="build the index version but leave the live one")

    dev_parser = command("dev", dev, "start the database and the Dagster UI")
    dev_parser.add_argument("--sources", help="sources file (default data/sources.yaml)")
    dev_parser.add_argument("--port", type=int, default=3000)

    search_options(command("search", search, "search the live index"))

    serve_parser = command("serve", serve, "the HTTP search service: GET /search, /health, /ready, /metrics, /docs")
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument("--port", type=int, default=8000)
    serve_parser.add_argument("--pool", type=int, default=8,
                              help="database connections of each worker (default 8; twice that at most: searches take two)")
    serve_parser.add_argument("--workers", type=int, default=1,
                              help="processes answering on the one port (default 1); each loads its own model, lexical "
                                   "mirror lists and --pool; /metrics adds up all of them")

    eval_options(command("eval", evaluate, "score an index version against a labelled query set"))

    index_parser = command("index", index, "list index versions, switch or roll back the live one, prune old ones")
    index_parser.add_argument("action", choices=["list", "switch", "rollback", "prune", "audit"],
                              help="audit: judge every version against the sources file (revoke what shows too much)")
    index_parser.add_argument("version", nargs="?")
    index_parser.add_argument("--keep", type=int, default=3,
                              help="prune: other versions kept besides the live one and the rollback target (default 3)")

    migrate_options(command("migrate", migrate, "build a candidate index beside the live one, gate it on "
                            "labelled queries, switch it in only if it is no worse"))

    token_parser = command("token", token, "print a signed principals token for reading as lectio_reader over "
                           "a connection of your own (bind it as a parameter: set_config('lectio.principals', %%s, "
                           "true) in each transaction)")
    token_parser.add_argument("--principal", action="append", required=True, help="principal (repeatable)")
    token_parser.add_argument("--seconds", type=int, default=300, help="lifetime of the token (default 300)")

    command("down", down, "stop the embedded database of LECTIO_HOME")

    model_options(command("model", model_command,
                          "the embedding runtime this machine measured, and the rerankers trained here"))

    dagster = commands.add_parser(
        "dagster", help="run the dagster CLI against this LECTIO_HOME (e.g. `lectio dagster definitions validate`)"
    )
    dagster.add_argument("dagster_args", nargs=argparse.REMAINDER)
    dagster.set_defaults(handler=dagster_command, command="dagster")
    return parser
