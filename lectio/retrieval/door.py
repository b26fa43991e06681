"""Searching an index version (the live one by default): the door every caller's search comes in by.

A search is one SearchRequest. It is checked here (its length, its version, whether the version's
model can embed) and answered as the router's plan says (lectio.retrieval.router): a reference
looked up (lectio.retrieval.lookup), a question about a Greek or Hebrew word answered from the
lexicon (lectio.retrieval.lexicon), anything else ranked (lectio.retrieval.ranking: the
retrievers' proposals, their fusion, the ranking stages). Every read runs as the application role
under row-level security with the caller's principals."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import psycopg

from lectio.bible.refs import UnknownReference
from lectio.embedding.model import Embedder
from lectio.index import revocation, security, versions
from lectio.retrieval import bounds, lexical, lexicon, query_text, router
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.filters import Filters
from lectio.retrieval.lookup import lookup
from lectio.retrieval.ranking import ranked_search
from lectio.retrieval.request import VersionRequest
from lectio.retrieval.response import SearchResponse
from lectio.retrieval.scope import Scope
from lectio.sources import callers

DEFAULT_PRINCIPALS = ("public",)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# The longest query searched, at every door (the library, the CLI, evaluation, the service): a
# paragraph a reader sends is a few hundred characters, and a 120 KB one cost 30 s and 1.5 GB.
MAX_QUERY_CHARS = 1000


@dataclass(frozen=True)
class SearchRequest:
    """One search as a caller asks it: the query, how many results, as whom, of which version
    (the live one when None), narrowed how and ranked how."""

    query: str
    k: int = 10
    principals: tuple[str, ...] = DEFAULT_PRINCIPALS
    version: str | None = None
    filters: Filters = field(default_factory=Filters)
    config: SearchConfig = field(default_factory=SearchConfig)


def search(conn: psycopg.Connection, request: SearchRequest, *, embedder: Embedder | None = None,
           vector_conn: psycopg.Connection | None = None) -> SearchResponse:
    """The answer to `request`: a reference is looked up, a word study answered from the
    lexicon, anything else ranked. `embedder` is the caller's loaded model (the version's is
    loaded when None or another); with `vector_conn`, a second connection to the same database
    (a service's pool has one to spare), the vector side of a ranked search runs on it while
    `conn` answers the lexical side."""
    if problem := bounds.problem("k", "int", request.k):  # the config was checked as it was built
        raise ValueError(problem)
    request = replace(request, principals=callers(request.principals))
    if len(request.query) > MAX_QUERY_CHARS:
        raise ValueError(f"the query is {len(request.query):,} characters long; at most {MAX_QUERY_CHARS:,} are "
                         "searched (a question, a statement or a paragraph)")
    # PostgreSQL text cannot hold NUL, and no control character means anything in a query.
    query = _CONTROL.sub(" ", request.query).strip()
    if not query:
        return SearchResponse(query, "none", request.version, message="empty query: nothing to search for")
    info = versions.get_version(conn, request.version)
    if refused := _unservable(query, request.version, info):
        return refused
    request = replace(request, config=request.config.as_chosen_by(info.rankers))
    try:  # how the query is answered, decided once from what it says
        planned = router.plan(query_text.read(query), request.config)
    except UnknownReference as exc:
        return SearchResponse(query, "reference", info.version, message=str(exc))
    searcher = _searcher(conn, replace(request, query=query), info, bool(planned.ranges), embedder, vector_conn)
    if isinstance(searcher, SearchResponse):
        return searcher
    with conn.transaction():
        # Every read of chunks runs as the application role under row-level security, with the
        # caller's principals; the WHERE clause on acl only helps the planner use its index.
        security.act_as_reader(conn, request.principals)
        response = replace(_answer(searcher, planned), query=query)
    if not response.results and response.message is None:
        response.message = (f"no results: nothing that {', '.join(request.principals)} may read matches this query"
                            + (" and its filters" if request.filters != Filters() else ""))
    return response


def _searcher(conn, request: SearchRequest, info: versions.IndexVersion, reference: bool, embedder: Embedder | None,
              vector_conn: psycopg.Connection | None) -> VersionRequest | SearchResponse:
    """What the search needs of the version, read as the owner before it turns reader: the
    lexical mirror (built once per version) and the model; a response where the model cannot
    embed for the version."""
    config, version = request.config, info.version
    scope = Scope(request.principals, request.filters, info.bm25_corpus)
    if not reference:  # a reference is looked up, not embedded
        try:
            embedder = embedder.for_model(info.model_id) if embedder else Embedder.for_queries_of(info.model_id)
        except ValueError as exc:
            return SearchResponse(request.query, "none", version,
                                  message=f"index version {version!r} cannot be searched here: {exc}")
    return VersionRequest(conn, info.table_name, request.query, request.k, scope, version, config, embedder,
                          info.layout, vector_conn, None if reference else lexical.version_mirror(conn, info, config))


def _answer(request: VersionRequest, planned: router.Plan) -> SearchResponse:
    """A reference's verses, a word's study, or else the ranked search, as `planned`."""
    if planned.ranges:
        return lookup(request, planned.ranges)
    if planned.word is not None:
        response = lexicon.study(replace(request, query=planned.subject), planned.word)
        if response is not None:
            return response
    return ranked_search(replace(request, query=planned.text, config=planned.config, embedded=planned.embedded,
                                 question=planned.question, topic=planned.topic))


def _unservable(query: str, version: str | None, info: versions.IndexVersion | None) -> SearchResponse | None:
    """The answer when the version asked for (the live one when None) cannot be searched."""
    if version is None and info is None:
        return SearchResponse(query, "none", None, message="no live index yet: run `lectio run` first")
    version = version or info.version
    if info is not None and info.status == "revoked":  # why is the operator's to know, not the caller's
        return SearchResponse(query, "none", version, message=revocation.unavailable(version))
    if info is None or info.status != "ready":
        return SearchResponse(query, "none", version, message=f"index version {version!r} is not ready")
    return None
