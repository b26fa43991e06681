"""What a caller of a serving path can learn: a revoked index is only "unavailable" to the HTTP
service's /search and /ready, `lectio search` (with and without --index) and `lectio eval`, while
the operator's log and `lectio index list` say why; and the service's token and header limits,
over a real loopback port started as `lectio serve` starts it. Each test failed before its fix."""

from __future__ import annotations

import json
import logging
import secrets
import socket
import threading
import time

import jwt
import pytest
import uvicorn

from lectio.index import revocation, versions
from lectio.serving.app import SERVER_OPTIONS, create_app
from lectio.serving.auth import MAX_PRINCIPALS, Verifier
from lectio.settings import auth_settings
from lectio.sources import load_sources
from cli import main as cli
from tests.integration.retrieval.test_service import get
from tests.integration.trust.test_trust import home, run  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.slow, pytest.mark.network]

ISSUER, AUDIENCE = "https://id.example.org", "lectio-search"
# What the judgement records of the leak below (a private source's id, a principal it was shown
# to): no caller may read any of it.
PRIVATE = ("notes-alice", "group:staff")


@pytest.fixture(scope="module")
def secret():
    return secrets.token_hex(32)


@pytest.fixture(scope="module")
def service(home, secret):
    """The service over the trust home, its Verifier from LECTIO_AUTH_* as `lectio serve` reads them."""
    assert run(home, home.sources("base")).index["live"]
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LECTIO_AUTH_SECRET", secret)
        env.setenv("LECTIO_AUTH_ISSUER", ISSUER)
        env.setenv("LECTIO_AUTH_AUDIENCE", AUDIENCE)
        app = create_app(home.settings, Verifier.of(auth_settings()), pool_size=2)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, **SERVER_OPTIONS))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the service did not start"
        time.sleep(0.1)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(30)


def signed(secret: str, principals, **claims) -> str:
    claims = {"principals": principals, "exp": int(time.time()) + 300, "iss": ISSUER, "aud": AUDIENCE, **claims}
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, secret, algorithm="HS256")


# ---------------------------------------------------------------- tokens and headers


@pytest.mark.parametrize("claims, status, message", [
    ({}, 200, None),
    ({"iss": "https://other.example.org"}, 401, "issuer"),
    ({"iss": None}, 401, '"iss"'),
    ({"aud": "another-service"}, 401, "Audience"),
    ({"aud": None}, 401, '"aud"'),
])
def test_a_configured_issuer_and_audience_are_required(service, secret, claims, status, message):
    got, body = get(service, "/search", signed(secret, ["user:alice"], **claims), q="study group")
    assert got == status, body
    assert message is None or (message in body["error"] and "results" not in body)


@pytest.mark.parametrize("principals, status, message", [
    ([f"group:g{n}" for n in range(MAX_PRINCIPALS)], 200, None),
    ([f"group:g{n}" for n in range(MAX_PRINCIPALS + 1)], 400, f"at most {MAX_PRINCIPALS}"),
    (["user:" + "a" * 200], 400, "longer than 128 characters"),
])
def test_a_token_names_a_bounded_number_of_short_principals(service, secret, principals, status, message):
    got, body = get(service, "/search", signed(secret, principals), q="study group")
    assert got == status, body
    assert message is None or (message in body["error"] and len(body["error"].splitlines()) == 1)


def raw_request(url: str, header: str) -> tuple[int | None, str]:
    """The status and body of one GET /search with `header` added, over a socket of its own; None
    when the server closed the connection before its answer could be read (it may close without
    reading the rest of a refused request, and the kernel then resets the connection)."""
    host, port = url.removeprefix("http://").split(":")
    answer = b""
    try:
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(f"GET /search?q=study HTTP/1.1\r\nHost: {host}\r\n{header}\r\n\r\n".encode())
            while chunk := sock.recv(65536):
                answer += chunk
    except (ConnectionResetError, BrokenPipeError):
        if not answer:
            return None, ""
    head, _, body = answer.decode().partition("\r\n\r\n")
    return int(head.split()[1]), body


def test_oversized_headers_are_refused_without_a_traceback(service, secret, caplog):
    with caplog.at_level(logging.WARNING):
        # Headers past 32 KiB, 10,000 principals among them: 431 from the app when the head came
        # whole, 400 from the server when it was still arriving; never searched.
        many = signed(secret, [f"user:u{n}" for n in range(10_000)])
        for header in (f"X-Padding: {'p' * 40_000}", f"Authorization: Bearer {many}", f"X-Padding: {'p' * 400_000}"):
            status, text = raw_request(service, header)
            assert status in (400, 431, None) and "results" not in text, (status, text[:200])
        # An Authorization header past its own cap, within the head's: 431 in one line from the app.
        got, body = get(service, "/search", "Bearer " + "a" * 20_000, q="x")
        assert got == 431 and body == {"error": "the Authorization header is longer than 16384 bytes"}
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert get(service, "/health") == (200, {"status": "ok"})  # the service lives on


# ---------------------------------------------------------------- a revoked live index


def test_a_revoked_index_is_only_unavailable_to_every_caller(home, service, secret, tmp_path, capsys, caplog):
    """Last here: it leaves the live version revoked."""
    assert run(home, home.sources("leaked", alice_acl='"user:alice", "group:staff"')).index["live"]
    with home.connect() as conn:
        # The leak fixed in the sources file, with no new run: the live version itself is revoked.
        revocation.judge(conn, revocation.allowed_acls(load_sources(home.sources("fixed"))))
        live = versions.get_version(conn)
    assert live.status == "revoked" and all(p in live.revoked_reason for p in PRIVATE)
    unavailable = f"index version {live.version} is unavailable"

    # What each serving path tells its caller, gathered first so that one run shows every path.
    heard, expected = {}, {}
    with caplog.at_level(logging.WARNING, logger="lectio.serving.app"):
        heard["GET /ready"] = get(service, "/ready")
        expected["GET /ready"] = (503, {"ready": False, "reason": f"the live {unavailable}"})
        for who, token in (("anonymous", None), ("group:staff", signed(secret, ["group:staff"]))):
            got, body = get(service, "/search", token, q="how to lead a study group")
            heard[f"GET /search as {who}"] = (got, body["results"], body["message"])
            expected[f"GET /search as {who}"] = (200, [], unavailable)
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q1", "query": "study group", "relevant": ["rom_8_28"]}) + "\n")
    for argv, code in ((["search", "how to lead a study group"], 1),
                       (["search", "how to lead a study group", "--principal", "group:staff"], 1),
                       (["search", "how to lead a study group", "--index", live.version], 2),
                       (["eval", str(queries), "--index", live.version], 2),
                       (["eval", str(queries)], 2)):
        capsys.readouterr()
        status = cli(argv)
        said, path = capsys.readouterr(), " ".join(argv[:1] + argv[2:])
        heard[path] = (status, (said.out + said.err).strip())
        # A search's answer (exit 1, no results) or a refusal (exit 2), one line either way.
        expected[path] = (code, unavailable if code == 1 else f"lectio {argv[0]}: {unavailable}")
    assert heard == expected
    # The service's log says why, once.
    logged = [r.getMessage() for r in caplog.records if r.name == "lectio.serving.app"]
    assert len(logged) == 1 and all(p in logged[0] for p in PRIVATE), logged

    # The operator's own command says why.
    capsys.readouterr()
    assert cli(["index", "list", "--json"]) == 0
    listed = {v["version"]: v for v in json.loads(capsys.readouterr().out)["versions"]}
    assert listed[live.version]["revoked_reason"] == live.revoked_reason
    assert cli(["index", "list"]) == 0
    assert live.revoked_reason in capsys.readouterr().out
