"""A reference that finds no verse because the caller's filters left every one out says so
(issue 63, item 12): `lectio search 'Romans 8:28' --kind notes` said no verses of it were in the
index, when the index holds them and verses are scripture, never notes. Tried at each door: the
library, the CLI and the service over loopback HTTP; a reference the index does not hold, or
holds only for others, still reads as absent."""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
import urllib.request

import pytest
import uvicorn

from lectio.retrieval.filters import Filters
from lectio.retrieval import SearchRequest, search
from lectio.serving.app import SERVER_OPTIONS, create_app
from lectio.serving.auth import Verifier
from cli import main as cli

pytestmark = [pytest.mark.slow, pytest.mark.network]

LEFT_OUT = "the index holds Romans 8:28, but the filters (kind notes) leave out every verse of it: a verse's kind is scripture, not notes"


def test_the_library_says_what_the_filters_left_out(main_run, conn):
    response = search(conn, SearchRequest("Romans 8:28", filters=Filters(kind="notes")))
    assert not response.results and response.message == LEFT_OUT
    other = search(conn, SearchRequest("Romans 8:28", filters=Filters(translation="KJV", testament="NT")))
    assert other.message == ("the index holds Romans 8:28, but the filters (translation KJV, testament NT) leave "
                             "out every verse of it")
    absent = search(conn, SearchRequest("Genesis 1:1", filters=Filters(kind="notes")))
    assert absent.message == "no verses of Genesis 1:1 are in the index"  # not held: nothing was left out


def test_the_cli_says_what_the_filters_left_out(main_run, capsys):
    assert cli(["search", "Romans 8:28", "--kind", "notes", "--json"]) == 1  # nothing found
    assert json.loads(capsys.readouterr().out)["message"] == LEFT_OUT


def test_the_service_says_what_the_filters_left_out(main_run, settings):
    app = create_app(settings, Verifier(secret=secrets.token_hex(16)), pool_size=2)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, **SERVER_OPTIONS))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the service did not start"
            time.sleep(0.1)
        port = server.servers[0].sockets[0].getsockname()[1]
        query = urllib.parse.urlencode({"q": "Romans 8:28", "kind": "notes"})
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/search?{query}", timeout=60) as answer:
            assert json.loads(answer.read())["message"] == LEFT_OUT
    finally:
        server.should_exit = True
        thread.join(30)
