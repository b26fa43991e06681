"""`lectio serve` over a real loopback port: the same answers as the CLI, principals only from a
verified token, and the endpoints an operator watches."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import signal
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import jwt
import pytest
import uvicorn

from lectio.retrieval.options import SearchOptions
from lectio.serving.app import SERVER_OPTIONS, create_app
from lectio.serving.auth import AuthError, Verifier
from cli import main as cli

pytestmark = [pytest.mark.slow, pytest.mark.network]

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
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, **SERVER_OPTIONS))  # as `lectio serve`
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


def get(url: str, path: str, token: str | None = None, timeout: float = 60, **params) -> tuple[int, dict | str]:
    request = urllib.request.Request(f"{url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else ""))
    if token:
        request.add_header("Authorization", token if " " in token else f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
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


def expiring(secret: str, exp) -> str:
    """A token whose `exp` is `exp` as given (PyJWT writes an infinite float as JSON Infinity)."""
    return jwt.encode({"principals": ["user:alice"], "exp": exp}, secret, algorithm="HS256")


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


@pytest.mark.parametrize("options", [[], ["--parents"], ["--mmr", "0.5"], ["--xrefs", "0.3"], ["--prominence", "0"],
                                     ["--mode", "lexical", "--parents"]])
def test_every_search_option_reaches_the_service_and_means_the_same_there(service, capsys, options):
    """The CLI and the service take the same options with the same defaults: a search sent with
    --server answers exactly as the same search run here, whatever the options."""
    url, _ = service
    query = ["search", "the Lord is my shepherd", "--json", *options]
    capsys.readouterr()
    assert cli(query) == 0
    local = json.loads(capsys.readouterr().out)
    assert cli([*query, "--server", url]) == 0
    remote = json.loads(capsys.readouterr().out)
    assert remote["results"] == local["results"] and len(local["results"]) == SearchOptions().k


def test_the_parents_option_changes_the_answer_at_every_door(service):
    """A sent option is not silently dropped: parents replace children in the service's answer."""
    url, _ = service
    _, plain = get(url, "/search", q="the Lord is my shepherd")
    _, parents = get(url, "/search", q="the Lord is my shepherd", parents="true")
    assert {r["granularity"] for r in plain["results"]} != {r["granularity"] for r in parents["results"]}
    assert get(url, "/search", q="shepherd", mmr=2)[0] == 400


# ---------------------------------------------------------------- numbers no search can mean

# The values (`inf` and 1e308 made every score NaN: a 500 and a 180-line traceback at the
# service, `"score": NaN` from the CLI), and the other numeric options out of their ranges.
UNMEANT = [("prominence", "inf"), ("prominence", "1e308"), ("xrefs", "1e308"), ("xrefs", "-inf"), ("mmr", "nan"),
           ("mmr", "inf"), ("k", "1e308"), ("k", "0")]


def finite_scores(text: str) -> list[float]:
    """The results' scores of a JSON answer read strictly: NaN or Infinity is no JSON."""
    def refuse(constant):
        raise AssertionError(f"{constant} in the answer")

    return [r["score"] for r in json.loads(text, parse_constant=refuse)["results"]]


def test_a_number_no_search_can_mean_is_a_400_in_one_line_at_the_service(service):
    url, _ = service
    server_log = logging.getLogger("uvicorn.error")  # uvicorn's own, where a 500's traceback goes
    logged = []
    handler = logging.Handler()
    handler.emit = logged.append
    server_log.addHandler(handler)
    try:
        for name, value in UNMEANT:
            status, body = get(url, "/search", q="grace", **{name: value})
            assert status == 400 and isinstance(body, dict), (name, value, status, body)
            assert body["error"].startswith(f"{name}") and len(body["error"].splitlines()) == 1, body
    finally:
        server_log.removeHandler(handler)
    assert not [r for r in logged if r.exc_info], "a traceback was logged"
    # The most each weight may be still ranks, every score a number.
    request = f"{url}/search?" + urllib.parse.urlencode({"q": "grace", "prominence": 100, "xrefs": 100, "mmr": 1})
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert finite_scores(answer.read().decode())


@pytest.mark.parametrize("option, value", [(f"--{name}", value) for name, value in UNMEANT if name != "k"]
                         + [("--k", "0"), ("--set", "fusion.prominence_weight=inf"), ("--set", "xrefs.weight=1e308"),
                            ("--set", "vector.ef_search=0"), ("--set", "stages.rerank.tokens=100000")])
def test_a_number_no_search_can_mean_is_refused_in_one_line_at_the_cli(service, tmp_path, capsys, option, value):
    url, _ = service
    named = value.partition("=")[0] if option == "--set" else option
    given = f"{option}={value}"  # one word, so argparse takes "-inf" as the value
    doors = [["search", "grace", "--json", given]]
    if option != "--set":  # the service searches with its own settings
        doors.append(["search", "grace", "--json", "--server", url, given])
    if option in ("--prominence", "--set"):  # what `lectio eval` takes of them
        queries = tmp_path / "q.jsonl"
        queries.write_text(json.dumps({"id": "g", "query": "grace", "relevant": ["rom_5_2"]}) + "\n")
        doors.append(["eval", str(queries), given])
    for argv in doors:
        capsys.readouterr()
        assert cli(argv) == 2, argv
        out, err = capsys.readouterr()
        assert not out and "Traceback" not in err and len(err.strip().splitlines()) == 1, (argv, err)
        assert named in err and "must be" in err, (argv, err)
    capsys.readouterr()
    assert cli(["search", "grace", "--json", "--prominence", "100", "--xrefs", "100"]) == 0
    assert finite_scores(capsys.readouterr().out)


def test_a_library_caller_meets_the_same_ranges(conn):
    from dataclasses import replace

    from lectio.retrieval.config import FusionSettings, SearchConfig
    from lectio.retrieval.xrefs import XrefSettings
    from lectio.retrieval import SearchRequest, search

    with pytest.raises(ValueError, match=r"^fusion.prominence_weight must be a number from 0 to 100, not inf$"):
        SearchConfig(fusion=FusionSettings(prominence_weight=float("inf")))
    with pytest.raises(ValueError, match=r"^xrefs.weight must be a number from 0 to 100, not 1e\+308$"):
        replace(SearchConfig(), xrefs=XrefSettings(weight=1e308))
    with pytest.raises(ValueError, match=r"^stages.mmr_lambda must be a number from 0 to 1, not nan$"):
        SearchConfig().with_settings({"stages.mmr_lambda": float("nan")})
    for k in (float("inf"), 0, 10**9):
        with pytest.raises(ValueError, match=r"^k must be an integer from 1 to 1,000, not "):
            search(conn, SearchRequest("grace", k=k))


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
    # `exp` too far off (LECTIO_TOKEN_MAX_SECONDS, 3600 here) or not a number: refused, never a 500.
    (lambda s: token(s, ["user:alice"], seconds=3600 + 120), 401, "more than 3600 s away"),
    (lambda s: expiring(s, 10**20), 401, "more than 3600 s away"),
    (lambda s: expiring(s, 1e300), 401, "more than 3600 s away"),
    (lambda s: expiring(s, float("inf")), 401, "exp"),
    (lambda s: expiring(s, str(int(time.time()) + 60)), 401, "exp"),
    (lambda s: expiring(s, "soon"), 401, "exp"),
    (lambda s: expiring(s, [int(time.time()) + 60]), 401, "exp"),
    # Waits on lectio.sources' principal check (a trailing newline must not pass a `$`).
    (lambda s: token(s, ["user:bob\n"]), 400, "is not a principal"),
])
def test_a_bad_token_gets_an_error_never_a_result(service, make, status, message):
    url, secret = service
    got, body = get(url, "/search", make(secret), q=NOTES_QUERY)
    assert got == status and message in body["error"] and "results" not in body


def test_a_token_lifetime_is_capped_by_lectio_token_max_seconds(monkeypatch):
    secret = secrets.token_hex(16)
    monkeypatch.setenv("LECTIO_TOKEN_MAX_SECONDS", "60")
    verifier = Verifier(secret=secret)
    assert verifier.max_seconds == 60
    assert verifier.principals(f"Bearer {token(secret, ['user:alice'], seconds=30)}") == ("public", "user:alice")
    with pytest.raises(AuthError, match="more than 60 s away") as refused:
        verifier.principals(f"Bearer {token(secret, ['user:alice'], seconds=300)}")
    assert refused.value.status == 401
    # Past the database's ceiling of a day, as for `lectio token`: refused at start.
    for bad in ("an hour", "0", "86401", "999999999"):
        monkeypatch.setenv("LECTIO_TOKEN_MAX_SECONDS", bad)
        with pytest.raises(ValueError, match="LECTIO_TOKEN_MAX_SECONDS"):
            Verifier(secret=secret)


def test_a_short_secret_is_refused_at_start_in_one_line(monkeypatch, capsys):
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("the service started with a short secret"))
    monkeypatch.setenv("LECTIO_AUTH_SECRET", "x" * 31)
    capsys.readouterr()
    assert cli(["serve"]) == 2
    err = capsys.readouterr().err
    assert "LECTIO_AUTH_SECRET" in err and "32 bytes" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="LECTIO_AUTH_SECRET"):
        Verifier(secret="é" * 15)  # 15 characters, 30 bytes: bytes are what HMAC keys on
    assert Verifier(secret="x" * 32).secret  # the shortest accepted


def test_metrics_label_unknown_paths_as_one(service):
    url, _ = service
    paths = [f"/no-such-page-{n}" for n in range(300)]
    for path in paths:
        assert get(url, path)[0] == 404
    status, text = get(url, "/metrics")
    assert status == 200 and "no-such-page" not in text
    routes = {*get(url, "/openapi.json")[1]["paths"], "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}
    assert set(re.findall(r'endpoint="([^"]*)"', text)) <= routes | {"unmatched"}
    counted = re.search(r'^lectio_requests_total\{endpoint="unmatched",status="404"\} (\S+)$', text, re.M)
    assert counted and float(counted.group(1)) >= len(paths)
    assert len(text.splitlines()) < len(paths)  # not one series, nor a histogram, per path


def test_ready_is_503_while_the_live_index_is_revoked(service, main_run, conn):
    url, _ = service
    live = main_run.index["version"]
    conn.execute("UPDATE index_versions SET status = 'revoked', revoked_reason = 'source secret-notes' WHERE version = %s",
                 (live,))
    try:
        status, body = get(url, "/ready")
        assert status == 503 and body == {"ready": False, "reason": f"the live index version {live} is unavailable"}
    finally:
        conn.execute("UPDATE index_versions SET status = 'ready', revoked_reason = NULL WHERE version = %s", (live,))
    assert get(url, "/ready") == (200, {"ready": True, "live": live})


def test_ready_says_503_within_seconds_when_the_server_dies_and_the_service_comes_back(service, settings):
    """Last here: it kills the session's embedded server. Each /ready must answer within the
    client's 5 s (before the fix it waited out psycopg_pool's 30 s, retried 8 times)."""
    from lectio.index.database import restart_embedded, server_is_down

    url, _ = service
    assert get(url, "/ready")[0] == 200  # the pool holds a connection to the server about to die
    os.kill(int((settings.pgdata / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
    try:
        deadline = time.monotonic() + 30
        while (answer := get(url, "/ready", timeout=5))[0] != 503:  # a backend may outlive it briefly
            assert answer[0] == 200 and time.monotonic() < deadline, answer
            time.sleep(0.1)
        # Why names the server's socket and role: that goes to the log, not to whoever asks.
        assert answer[1] == {"ready": False, "reason": "the database does not answer"}
        status, payload = get(url, "/search", q="Philippians 4:6", k=5)  # searches still recover
        assert status == 200 and payload["results"][0]["refs"] == ["phil_4_6"]
        deadline = time.monotonic() + 60
        while get(url, "/ready", timeout=5)[0] != 200:
            assert time.monotonic() < deadline, "/ready did not come back after the server restarted"
            time.sleep(0.2)
    finally:
        if server_is_down(settings):  # the test failed before the service restarted it
            restart_embedded(settings)
