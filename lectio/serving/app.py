"""`lectio serve`: the search service a study tool calls for every question a reader asks.

FastAPI on uvicorn: the ecosystem's usual pair for a small JSON API, with validation of query
parameters and an OpenAPI page (`/docs`) for free. The model is loaded once, at start; searches
take two connections from a pool that survives a database restart (lectio.index.pool), one for
the lexical side and one for the vector side that runs beside it, and run
under row-level security with the principals of the caller's verified token (lectio.serving.auth),
so a bug here still cannot widen what the database lets a principal read.
"""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager
from typing import Literal

import psycopg
from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from lectio.embedding.model import Embedder
from lectio.index import mirror, versions
from lectio.index.pool import ReadPool
from lectio.retrieval.filters import Filters
from lectio.retrieval.search import SearchConfig, search
from lectio.serving.auth import AuthError, Verifier
from lectio.settings import Settings

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0)
UNMATCHED = "unmatched"  # the one label of every path no route serves


def endpoint_label(request: Request) -> str:
    """The matched route's template, never the raw path: a client picking paths must not pick how
    many series /metrics holds (one per 404 path grows it without bound)."""
    route = request.scope.get("route")  # set by the router on a match, a wrong method included
    return getattr(route, "path", UNMATCHED)


def not_ready_reason(live: versions.IndexVersion | None) -> str | None:
    """Why the live index cannot be served, or None when it can."""
    if live is None:
        return "no live index: run `lectio run`"
    if live.status == "revoked":
        return f"the live index {live.version} is revoked: {live.revoked_reason or 'no reason recorded'}"
    if live.status != "ready":
        return f"the live index {live.version} is {live.status}, not ready"
    return None


class Metrics:
    """Prometheus series of one app (a registry of its own, so two apps in one process, as in
    the tests, do not collide)."""

    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter("lectio_requests", "HTTP requests", ["endpoint", "status"], registry=self.registry)
        self.latency = Histogram("lectio_request_seconds", "Time to answer a request", ["endpoint"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.errors = Counter("lectio_search_errors", "Searches that failed after retries", registry=self.registry)


def create_app(settings: Settings, verifier: Verifier, pool_size: int = 8) -> FastAPI:
    metrics = Metrics()
    state: dict = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        state["embedder"] = Embedder()
        state["embedder"].encode(["warm up"])  # the first encode pays for lazy loading
        state["pool"] = ReadPool(settings, size=pool_size, pairs=True)
        # The live version's lexical mirror, so the first search does not pay for building it. A
        # home with no index yet serves (and says it is not ready) as before.
        try:
            state["pool"].run_once(lambda conn: mirror.ensure(conn, versions.get_version(conn), settings.home))
        except psycopg.Error as exc:
            log.warning("lexical mirror not loaded at start: %s", (str(exc).splitlines() or [type(exc).__name__])[0])
        yield
        state["pool"].close()

    app = FastAPI(title="lectio", summary="Permission-aware search over scripture, commentary and documents",
                  lifespan=lifespan)

    @app.middleware("http")
    async def count(request: Request, call_next):
        started = time.perf_counter()
        response = await call_next(request)
        endpoint = endpoint_label(request)
        metrics.requests.labels(endpoint, str(response.status_code)).inc()
        metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        return response

    @app.exception_handler(AuthError)
    async def refused(request: Request, exc: AuthError):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    @app.get("/search", summary="Search the live index as the caller's principals")
    def search_endpoint(
        request: Request,
        q: str = Query(..., min_length=1, max_length=1000, description="the reader's question or a reference"),
        k: int = Query(20, ge=1, le=100),
        # Filters' fields are the query parameters, as they are the CLI's options.
        filters: Filters = Depends(),
        mode: Literal["hybrid", "vector", "lexical"] = "hybrid",
    ):
        principals = verifier.principals(request.headers.get("authorization"))
        if problem := filters.problem():
            return JSONResponse({"error": problem}, status_code=400)
        started = time.perf_counter()
        try:
            response = state["pool"].run_pair(lambda conn, second: search(
                conn, q, k=k, principals=principals, filters=filters, config=SearchConfig(mode=mode),
                embedder=state["embedder"], vector_conn=second))
        except Exception:
            metrics.errors.inc()
            raise
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
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
            return JSONResponse({"ready": False, "reason": f"the database does not answer: {reason}"}, status_code=503)
        if reason := not_ready_reason(live):
            return JSONResponse({"ready": False, "reason": reason}, status_code=503)
        return {"ready": True, "live": live.version}

    @app.get("/metrics", summary="Prometheus metrics", response_class=PlainTextResponse)
    def prometheus():
        return PlainTextResponse(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
