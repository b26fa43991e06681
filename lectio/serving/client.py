"""A client of `lectio serve`: the same search over HTTP, with no model or database in the
caller's process. Standard library only, so asking a server costs no extra dependency."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from lectio.retrieval import Filters, SearchOptions


def search_remote(server: str, query: str, options: SearchOptions, filters: Filters, token: str | None) -> dict:
    """The service's JSON answer to GET /search. A refusal or an unreachable server is a
    ValueError naming the server and its reason, never a traceback."""
    params = {"q": query, **options.given(), **filters.given()}
    request = urllib.request.Request(f"{server.rstrip('/')}/search?{urllib.parse.urlencode(params)}")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as exc:
        raise ValueError(f"{server} answered {exc.code}: {_reason(exc)}") from None
    except urllib.error.URLError as exc:
        raise ValueError(f"cannot reach {server}: {exc.reason}") from None


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.load(exc)
        return body.get("error") or body.get("detail") or exc.reason
    except ValueError:
        return exc.reason
