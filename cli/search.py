"""`lectio search`: the live index searched here, or through a running `lectio serve` (`--server`)."""

from __future__ import annotations

import argparse
import os

from cli.output import print_payload
from lectio.index import revocation, schema
from lectio.index.database import ensure_database
from lectio.retrieval import FILTER_HELP, Filters, MODES, OPTION_HELP, SearchOptions
from lectio.settings import load_settings
from lectio.sources import check_principals


def search_options(search: argparse.ArgumentParser) -> None:
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


def search(args) -> int:
    if args.server:
        return _search_server(args)
    from lectio.retrieval import DEFAULT_PRINCIPALS, SearchRequest, search as search_index

    settings = load_settings()
    filters, options = _filters(args), _options(args)
    principals = check_principals(args.principal or DEFAULT_PRINCIPALS)
    with ensure_database(settings).connect() as conn:
        schema.ensure_schema(conn)
        if args.index:
            revocation.refuse_unservable(conn, args.index)
        response = search_index(conn, SearchRequest(args.query, k=options.k, principals=principals, version=args.index,
                                                    filters=filters, config=options.config(args.settings)))
    return _print_results(args, response.to_json())


def _print_results(args, payload: dict) -> int:
    lines = [payload["message"]] if payload.get("message") else []
    for r in payload["results"]:
        refs = ", ".join(r["refs"][:3]) + (" …" if len(r["refs"]) > 3 else "")
        lines.append(f"{r['rank']:>2}. {r['chunk_id']}  [{refs}]  score {r['score']:.3f}\n    {r['text'][:200]}")
    print_payload(args, payload, "\n".join(lines) or "no results")
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
