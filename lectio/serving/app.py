"""`lectio serve`: the search service a study tool calls for every question a reader asks.

FastAPI on uvicorn: the ecosystem's usual pair for a small JSON API, with validation of query
parameters and an OpenAPI page (`/docs`) for free. The model is loaded once, at start; searches
take two connections from a pool that survives a database restart (lectio.index.pool), one for
the lexical side and one for the vector side that runs beside it, and run
under row-level security with the principals of the caller's verified token (lectio.serving.auth),
so a bug here still cannot widen what the database lets a principal read.

`lectio serve --workers N` runs N such processes behind one port (uvicorn's own supervisor): each
builds its app with `from_environment`, so each holds its own model, lexical mirror lists and
pool, and their metrics are added up through prometheus_client's multiprocess mode.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import stat
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

import psycopg
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from lectio.embedding.model import Embedder
from lectio.index import mirror, revocation, versions
from lectio.index.pool import ReadPool
from lectio.retrieval import Filters, MAX_QUERY_CHARS, SearchOptions, SearchRequest, search
from lectio.serving.auth import AuthError, Verifier
from lectio.settings import Settings, auth_settings, load_settings

log = logging.getLogger(__name__)

# The most a request's query string and headers may hold: the Authorization header's own cap
# (lectio.serving.auth.MAX_AUTHORIZATION_BYTES), a full query and the usual headers fit. Past it,
# a request is answered 431 by the app, or 400 by the server while the head is still arriving.
MAX_HEAD_BYTES = 32 * 1024
# How `lectio serve` runs the app (uvicorn.run's and uvicorn.Config's options). h11, not httptools
# (uvicorn's choice when it is installed): h11 stops buffering a head past the cap, httptools
# reads headers of any length into memory.
SERVER_OPTIONS = {"http": "h11", "h11_max_incomplete_event_size": MAX_HEAD_BYTES, "log_level": "warning"}
# How long uvicorn's supervisor waits for a worker to answer its ping before killing it (its default
# is 5 s): a worker importing torch and loading the model on a busy machine can take longer, and one
# killed for it would only start loading again.
WORKER_PING_SECONDS = 60
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0)
UNMATCHED = "unmatched"  # the one label of every path no route serves
# How the parent of several workers hands each its pool size (the other settings are read from
# the environment anyway); and prometheus_client's folder where each process writes its series.
POOL_ENV = "LECTIO_SERVE_POOL"
SUPERVISOR_ENV = "LECTIO_SERVE_SUPERVISOR"  # the pid of `lectio serve --workers`'s supervisor
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The header of every answer naming the process that gave it: behind one port, which worker it
# was, for a client's or a proxy's log (a process id grants nothing).
PROCESS_HEADER = "X-Lectio-Process"


def endpoint_label(request: Request) -> str:
    """The matched route's template, never the raw path: a client picking paths must not pick how
    many series /metrics holds (one per 404 path grows it without bound)."""
    route = request.scope.get("route")  # set by the router on a match, a wrong method included
    return getattr(route, "path", UNMATCHED)


def not_ready_reason(live: versions.IndexVersion | None) -> str | None:
    """Why the live index cannot be served, or None when it can: what any caller of /ready hears.
    Why a version was revoked names private sources and principals, so it is the log's alone."""
    if live is None:
        return "no live index: run `lectio run`"
    if live.status == "revoked":
        return f"the live {revocation.unavailable(live.version)}"
    if live.status != "ready":
        return f"the live index {live.version} is {live.status}, not ready"
    return None


class Metrics:
    """Prometheus series of one app (a registry of its own, so two apps in one process, as in
    the tests, do not collide). Under several workers (MULTIPROCESS_ENV set before prometheus_client
    was imported) each process writes its values to that folder, and /metrics, whichever worker
    answers it, adds up every worker's: a scrape through the one port sees the whole service."""

    def __init__(self):
        self.shared = os.environ.get(MULTIPROCESS_ENV)
        self.registry = CollectorRegistry()
        self.requests = Counter("lectio_requests", "HTTP requests", ["endpoint", "status"], registry=self.registry)
        self.latency = Histogram("lectio_request_seconds", "Time to answer a request", ["endpoint"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.errors = Counter("lectio_search_errors", "Searches that failed after retries", registry=self.registry)

    def exposition(self) -> bytes:
        if not self.shared:
            return generate_latest(self.registry)
        every_worker = CollectorRegistry()
        MultiProcessCollector(every_worker, path=self.shared)
        return generate_latest(every_worker)


class RevocationLog:
    """The operator's side of a refusal: callers hear that a version is unavailable, the log says
    why it was revoked, once per version a process refuses (a probe every few seconds must not
    fill the log with it)."""

    def __init__(self):
        self.logged: set[str] = set()

    def note(self, info: versions.IndexVersion | None) -> None:
        if info is None or info.status != "revoked" or info.version in self.logged:
            return
        self.logged.add(info.version)
        log.warning("index version %s is revoked and not served: %s", info.version,
                    info.revoked_reason or "no reason recorded")


def _query_embedder(live) -> Embedder | None:
    """What the live version's queries are embedded with (ONNX where this home measured it as
    giving the version's vectors, whatever runtime ingests here), warmed up, so the service loads
    nothing its searches will not use and measures nothing; None without a live version."""
    try:
        embedder = Embedder.for_queries_of(live.model_id) if live is not None else None
    except ValueError:  # a version this process cannot embed for: its searches say so
        return None
    if embedder is not None:
        embedder.encode(["warm up"])  # the first encode pays for loading
    return embedder


def build_mirror_first(settings: Settings) -> None:
    """The live version's lexical mirror built in the home before several workers start, so each
    maps its files at start instead of all of them reading every chunk's words at once. Built in a
    process of its own: the build holds every chunk's words, and that memory goes back to the
    system when the process ends, not to the supervisor for as long as the service runs."""
    builder = multiprocessing.get_context("spawn").Process(target=_build_mirror, args=(settings,),
                                                           name="lectio-mirror")
    builder.start()
    builder.join()


def _build_mirror(settings: Settings) -> None:
    from lectio.index.database import ensure_database

    try:
        with ensure_database(settings).connect() as conn:
            mirror.ensure(conn, versions.get_version(conn), settings.home)
    except psycopg.Error as exc:  # the workers serve, not ready, until the database answers
        log.warning("lexical mirror not built at start: %s", (str(exc).splitlines() or [type(exc).__name__])[0])


# What each worker of `lectio serve --workers N` imports and calls for its app.
WORKER_APP = "lectio.serving.app:from_environment"


def from_environment() -> FastAPI:
    """The app of one worker of `lectio serve --workers N`: uvicorn imports this in each process
    it starts, so the settings come from the environment the parent checked and set."""
    die_with_supervisor()
    return create_app(load_settings(), Verifier.of(auth_settings()), pool_size=int(os.environ.get(POOL_ENV, "8")))


def die_with_supervisor() -> None:
    """This worker ends when its supervisor does, `kill -9` included: left behind it would go on
    serving unsupervised and hold the port, so the next start failed with "Address already in use".
    Linux's parent-death signal (SIGTERM: a graceful stop); where there is none, nothing."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    supervisor = os.environ.get(SUPERVISOR_ENV)
    if supervisor and os.getppid() != int(supervisor):  # it died before the signal was asked for
        os.kill(os.getpid(), signal.SIGTERM)


# The metrics folders of `lectio serve --workers N` in the temp directory: this, the supervisor's pid,
# a dash and tempfile's own letters. The pid tells a later start whether the folder's owner lives.
METRICS_PREFIX = "lectio-metrics-"


def metrics_folder() -> tempfile.TemporaryDirectory:
    """A folder of this supervisor's own for its workers' series (series a previous start left
    would be added to this one's), the folders of supervisors that are gone removed first."""
    reap_metrics_folders(Path(tempfile.gettempdir()))
    return tempfile.TemporaryDirectory(prefix=f"{METRICS_PREFIX}{os.getpid()}-")


def reap_metrics_folders(temp: Path) -> None:
    """Remove the metrics folders under `temp` whose supervisor is gone. A supervisor and its
    workers killed together (kill -9 of the process group, the OOM killer) run no code that could
    remove theirs, so the next start does. A folder of a living process (a reused pid among them)
    or of another user is left."""
    for folder in temp.glob(f"{METRICS_PREFIX}*-*"):
        pid = folder.name.removeprefix(METRICS_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)) and _own_folder(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    return True


def _own_folder(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def leave_no_metrics_behind() -> None:
    """As a worker stops, the service's metrics folder removed where its supervisor is gone: the
    supervisor removes it as it returns, but `kill -9` lets it run no code, and its workers stop
    then (die_with_supervisor). Each worker may try; the first removes it."""
    supervisor, shared = os.environ.get(SUPERVISOR_ENV), os.environ.get(MULTIPROCESS_ENV)
    if supervisor and shared and os.getppid() != int(supervisor):
        shutil.rmtree(shared, ignore_errors=True)


def create_app(settings: Settings, verifier: Verifier, pool_size: int = 8) -> FastAPI:
    metrics = Metrics()
    state: dict = {}
    revocations = RevocationLog()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        state["pool"] = ReadPool(settings, size=pool_size, pairs=True)
        # The live version's lexical mirror, so the first search does not pay for building it. A
        # home with no index yet serves (and says it is not ready) as before.
        live = None
        try:
            live = state["pool"].run_once(versions.get_version)
            state["pool"].run_once(lambda conn: mirror.ensure(conn, live, settings.home))
        except psycopg.Error as exc:
            log.warning("lexical mirror not loaded at start: %s", (str(exc).splitlines() or [type(exc).__name__])[0])
        state["embedder"] = _query_embedder(live)
        try:
            yield
            state["pool"].close()
        finally:
            leave_no_metrics_behind()

    app = FastAPI(title="lectio", summary="Permission-aware search over scripture, commentary and documents",
                  lifespan=lifespan)

    @app.middleware("http")
    async def cap_head(request: Request, call_next):
        # h11 caps a head that is still arriving; one that came whole in a single read (asyncio
        # reads up to 256 KiB) is measured here, so the cap holds however a client sends it.
        size = len(request.scope["query_string"]) + sum(len(k) + len(v) for k, v in request.headers.raw)
        if size > MAX_HEAD_BYTES:
            return JSONResponse({"error": f"the request's headers and query are longer than {MAX_HEAD_BYTES} bytes"},
                                status_code=431)
        return await call_next(request)

    @app.middleware("http")
    async def count(request: Request, call_next):
        started = time.perf_counter()
        response = await call_next(request)
        endpoint = endpoint_label(request)
        metrics.requests.labels(endpoint, str(response.status_code)).inc()
        metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        response.headers[PROCESS_HEADER] = str(os.getpid())
        return response

    @app.exception_handler(AuthError)
    async def refused(request: Request, exc: AuthError):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def unreadable(request: Request, exc: RequestValidationError):
        # A parameter that is not of its type (k=1e308, prominence=high) is refused as every other
        # bad value is: 400 and one line naming it, not FastAPI's 422 list of pydantic's errors.
        # The value is not echoed: a query string may be 32 KiB.
        first = exc.errors()[0]
        name = ".".join(str(part) for part in first.get("loc", ())[1:]) or "the request"
        return JSONResponse({"error": f"{name}: {first.get('msg', 'not readable')}"}, status_code=400)

    def explain(version: str) -> None:
        """Logs why `version` was refused to a caller (once); the caller's answer stands either way."""
        if version in revocations.logged:
            return
        try:
            revocations.note(state["pool"].run_once(lambda conn: versions.get_version(conn, version)))
        except psycopg.Error:  # a later refusal logs it
            pass

    @app.get("/search", summary="Search the live index as the caller's principals")
    def search_endpoint(
        request: Request,
        q: str = Query(..., min_length=1, max_length=MAX_QUERY_CHARS, description="the reader's question or a reference"),
        # Filters' and SearchOptions' fields are the query parameters, as they are the CLI's options.
        filters: Filters = Depends(),
        options: SearchOptions = Depends(),
    ):
        principals = verifier.principals(request.headers.get("authorization"))
        if problem := filters.problem() or options.problem():
            return JSONResponse({"error": problem}, status_code=400)
        started = time.perf_counter()
        try:
            asked = SearchRequest(q, k=options.k, principals=principals, filters=filters, config=options.config())
            response = state["pool"].run_pair(lambda conn, second: search(
                conn, asked, embedder=state["embedder"], vector_conn=second))
        except Exception:
            metrics.errors.inc()
            raise
        if response.message == revocation.unavailable(response.index_version):
            explain(response.index_version)
        payload = response.to_json()
        payload["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return payload

    @app.get("/health", summary="The process is up")
    def health():
        return {"status": "ok"}

    @app.get("/ready", summary="The database answers and the live index may be served")
    def ready():
        try:
            # Once, not retried: a probe must hear "not ready" in seconds, not wait out a restart.
            live = state["pool"].run_once(versions.get_version)
        except Exception as exc:  # any failure to reach the database means not ready
            # The error names hosts, sockets and roles: the operator's log gets it, a caller does not.
            log.warning("/ready: the database does not answer: %s", (str(exc).splitlines() or [type(exc).__name__])[0])
            return JSONResponse({"ready": False, "reason": "the database does not answer"}, status_code=503)
        revocations.note(live)
        if reason := not_ready_reason(live):
            return JSONResponse({"ready": False, "reason": reason}, status_code=503)
        return {"ready": True, "live": live.version}

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    def prometheus():
        return PlainTextResponse(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return app
