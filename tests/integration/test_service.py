"""`lectio serve` over a real loopback port: the same answers as the CLI, principals only from a
verified token, and the endpoints an operator watches."""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import jwt
import pytest
import uvicorn

from lectio.serving.app import create_app
from lectio.serving.auth import Verifier
from pipelines.cli import main as cli

NOTES_QUERY = "anxious prayer before the hospital appointment"


@pytest.fixture(scope="module")
def rsa_keys():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return key, public.decode()


@pytest.fixture(scope="module")
def service(main_run, settings, rsa_keys):
    secret = secrets.token_hex(16)
    app = create_app(settings, Verifier(secret=secret, public_key=rsa_keys[1]), pool_size=4)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the service did not start"
        time.sleep(0.1)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", secret
    server.should_exit = True
    thread.join(30)


def get(url: str, path: str, token: str | None = None, **params) -> tuple[int, dict | str]:
    request = urllib.request.Request(f"{url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else ""))
    if token:
        request.add_header("Authorization", token if " " in token else f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = answer.read().decode()
            status = answer.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read().decode(), exc.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


def token(secret: str, principals, seconds: int = 300, **extra) -> str:
    claims = {"principals": principals, "exp": int(time.time()) + seconds, **extra}
    return jwt.encode(claims, secret, algorithm="HS256")


def sources(payload: dict) -> set[str]:
    return {r["source_id"] for r in payload["results"]}


def test_health_ready_openapi_and_metrics(service, main_run):
    url, _ = service
    assert get(url, "/health") == (200, {"status": "ok"})
    status, ready = get(url, "/ready")
    assert status == 200 and ready == {"ready": True, "live": main_run.index["version"]}
    status, spec = get(url, "/openapi.json")
    assert status == 200 and "/search" in spec["paths"]
    get(url, "/search", q="Philippians 4:6")
    status, text = get(url, "/metrics")
    assert status == 200
    assert 'lectio_requests_total{endpoint="/search",status="200"}' in text
    assert 'lectio_request_seconds_bucket{endpoint="/search",le="0.1"}' in text


def test_the_service_answers_as_the_cli_does(service, capsys):
    url, _ = service
    status, payload = get(url, "/search", q="Philippians 4:6", k=5)
    assert status == 200 and payload["results"][0]["refs"] == ["phil_4_6"]
    assert payload["latency_ms"] > 0
    capsys.readouterr()
    assert cli(["search", "Philippians 4:6", "--k", "5", "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in payload.items() if k != "latency_ms"} == local
    assert cli(["search", "Philippians 4:6", "--k", "5", "--json", "--server", url]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert remote["results"] == local["results"]


def test_principals_come_only_from_a_verified_token(service, rsa_keys):
    url, secret = service
    status, anonymous = get(url, "/search", q=NOTES_QUERY, k=50, principal="user:bob")  # a parameter is ignored
    assert status == 200 and not {"notes-alice", "notes-bob"} & sources(anonymous)
    status, alice = get(url, "/search", token(secret, ["user:alice"]), q=NOTES_QUERY, k=50)
    assert status == 200 and "notes-alice" in sources(alice) and "notes-bob" not in sources(alice)
    rs256 = jwt.encode({"principals": ["user:bob"], "exp": int(time.time()) + 60}, rsa_keys[0], algorithm="RS256")
    status, bob = get(url, "/search", rs256, q=NOTES_QUERY, k=50)
    assert status == 200 and "notes-bob" in sources(bob) and "notes-alice" not in sources(bob)


@pytest.mark.parametrize("make, status, message", [
    (lambda s: token("a-secret-that-is-not-the-services-one-at-all", ["user:alice"]), 401, "not valid"),
    (lambda s: token(s, ["user:alice"], seconds=-10), 401, "expired"),
    (lambda s: jwt.encode({"principals": ["user:alice"]}, s, algorithm="HS256"), 401, "exp"),
    (lambda s: token(s, ["nobody,user:bob"]), 400, "is not a principal"),
    (lambda s: token(s, "user:alice"), 400, "must be a list"),
    (lambda s: "Basic dXNlcjpwYXNz", 401, "Bearer"),
    (lambda s: "Bearer not.a.jwt", 401, "not"),
])
def test_a_bad_token_gets_an_error_never_a_result(service, make, status, message):
    url, secret = service
    got, body = get(url, "/search", make(secret), q=NOTES_QUERY)
    assert got == status and message in body["error"] and "results" not in body
