"""Searching an index version (the live one by default).

A reference is looked up directly; a question about a Greek or Hebrew word gets its Strong's
entry and the verses that use it; anything else is ranked by several retrievers fused by
reciprocal rank fusion: HNSW vectors, BM25 with expansion by the translations' renderings,
pericope titles, and the corpus's own cross-reference graph; a one-word topic is fused again with
its words weighing more, in every translation (lectio.retrieval.topics), a paragraph keeps whole
passages (ParagraphSettings), a search narrowed to scripture also hears the commentary and notes
the caller may read (EvidenceSettings), and the fused hits pass the ranking stages
(lectio.retrieval.stages). A search is one SearchRequest. Every read runs as the application role
under row-level security with the caller's principals."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace

import psycopg
from psycopg import sql

from lectio.index import mirror
from lectio.index import revocation, security, versions
from lectio.retrieval import candidates, lexical, query_text, rerank, shape, stages, topics, word_study
from lectio.retrieval.config import SearchConfig
from lectio.retrieval.modes import HYBRID
from lectio.retrieval.filters import Filters
from lectio.retrieval.hits import SELECT_COLUMNS, Hit, hits_by_id
from lectio.retrieval.scope import Scope
from lectio.retrieval.expansion import expansion_words
from lectio.rulesets.strongs import plain_letters
from lectio.embedding.model import Embedder, one_model_thread
from lectio.bible.refs import RefRange, UnknownReference
from lectio.sources import callers

DEFAULT_PRINCIPALS = ("public",)
# With several translations indexed, one is preferred unless the caller names another.
DEFAULT_TRANSLATION = "WEB"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
# The longest query searched, at every door (the library, the CLI, evaluation, the service): a
# paragraph a reader sends is a few hundred characters, and a 120 KB one cost 30 s and 1.5 GB.
MAX_QUERY_CHARS = 1000


def _one_model_thread() -> None:
    # One short query gains little from a second core, and a second model thread spins against
    # the database answering the same search (measured beside a busy core: 9 ms on one thread,
    # 36-500 ms on two). Set per thread and lazily, so ingestion keeps all cores and a search
    # served by ONNX Runtime never imports torch.
    one_model_thread()


# Query embeddings run here, beside the database's work on the same search (one per concurrent
# search a service is likely to serve).
_EMBEDDING = ThreadPoolExecutor(max_workers=8, thread_name_prefix="lectio-query-embedding",
                                initializer=_one_model_thread)


# A search narrowed to scripture reads the unfiltered ranking its evidence needs here, on the
# search's second connection, beside the filtered one (one per concurrent search, as above).
_BESIDE = ThreadPoolExecutor(max_workers=8, thread_name_prefix="lectio-evidence")


@dataclass(frozen=True)
class Result:
    rank: int
    chunk_id: str
    kind: str
    refs: list[str]
    source_id: str
    breadcrumb: str | None
    text: str  # what a caller hands to a model: the context header, then the chunk's own text
    score: float
    granularity: str
    translation: str | None


@dataclass
class SearchResponse:
    query: str
    mode: str  # "reference", or the SearchConfig mode that answered
    index_version: str | None
    results: list[Result] = field(default_factory=list)
    message: str | None = None

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "mode": self.mode,
            "index_version": self.index_version,
            "message": self.message,
            "results": [asdict(r) for r in self.results],
        }


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
    if request.k < 1:
        raise ValueError(f"k must be at least 1, not {request.k}")
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
    meant = query_text.read(query)  # what every strategy below reads of it, decided once
    try:
        ranges = meant.reference()
    except UnknownReference as exc:
        return SearchResponse(query, "reference", info.version, message=str(exc))
    searcher = _searcher(conn, replace(request, query=query), info, bool(ranges), embedder, vector_conn)
    if isinstance(searcher, SearchResponse):
        return searcher
    with conn.transaction():
        # Every read of chunks runs as the application role under row-level security, with the
        # caller's principals; the WHERE clause on acl only helps the planner use its index.
        security.act_as_reader(conn, request.principals)
        response = replace(_route(searcher, meant, ranges), query=query)
    if not response.results and response.message is None:
        response.message = (f"no results: nothing that {', '.join(request.principals)} may read matches this query"
                            + (" and its filters" if request.filters != Filters() else ""))
    return response


def _searcher(conn, request: SearchRequest, info: versions.IndexVersion, reference: bool, embedder: Embedder | None,
              vector_conn: psycopg.Connection | None) -> _Request | SearchResponse:
    """What the search needs of the version, read as the owner before it turns reader: the
    lexical mirror (built once per version) and the model; a response where the model cannot
    embed for the version."""
    config, version = request.config, info.version
    lexical_mirror = config.lexical.mirror and config.mode != "vector" and not reference
    scope = Scope(request.principals, request.filters, info.bm25_corpus,
                  mirror.ensure(conn, info) if lexical_mirror else None)
    if not reference:  # a reference is looked up, not embedded
        try:
            embedder = embedder.for_model(info.model_id) if embedder else Embedder.for_queries_of(info.model_id)
        except ValueError as exc:
            return SearchResponse(request.query, "none", version,
                                  message=f"index version {version!r} cannot be searched here: {exc}")
    return _Request(conn, info.table_name, request.query, request.k, scope, version, config, embedder, info.layout,
                    vector_conn)


def _route(request: _Request, meant: query_text.QueryText, ranges: list[RefRange]) -> SearchResponse:
    """A reference's verses, a word's study, or else the ranked search."""
    if ranges:
        return _lookup(request, ranges)
    word = meant.word_study() if request.config.word_study else None
    if word is not None:
        # The study reads the subject the query asks about ("love" of "the Greek word for love").
        response = _word_study(replace(request, query=meant.subject), word)
        if response is not None:
            return response
    config = request.config
    if shape.is_paragraph(meant.text, config.paragraphs.words):
        config = config.for_paragraphs()
    return _ranked_search(replace(request, query=meant.text, config=config))


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


@dataclass(frozen=True)
class _Request:
    """One search as its internals see it: a SearchRequest with what was read of its version.
    A narrower search inside it (the lexicon entries of a word study) is a replace() of it."""

    conn: psycopg.Connection
    table_name: str  # the version's chunk table
    query: str
    k: int
    filters: Scope
    version: str
    config: SearchConfig
    embedder: Embedder | None  # the version's model; a reference is looked up, not embedded
    layout: int | None  # the version's INDEX_LAYOUT (lectio.index.tables)
    vector_conn: psycopg.Connection | None = None  # the vector side's, beside the lexical side on `conn`


def _results(hits: list[Hit]) -> list[Result]:
    return [Result(rank, hit.chunk_id, hit.kind, list(hit.refs), hit.source_id, hit.breadcrumb, hit.result_text,
                   round(float(hit.score), 4), hit.granularity, hit.translation)
            for rank, hit in enumerate(hits, start=1)]


def _lookup(request: _Request, ranges: list[RefRange]) -> SearchResponse:
    """Verses of the referenced ranges in canonical order (the preferred translation first)."""
    conn, query, filters, version = request.conn, request.query, request.filters, request.version
    span, span_params = candidates.ordinal_spans([(r.start_ordinal, r.end_ordinal) for r in ranges])
    for translation in _translation_preference(filters):
        where, params = filters.where(translation)
        rows = conn.execute(
            sql.SQL("SELECT {cols} FROM {table} WHERE granularity = 'verse' AND ({span}) AND {where} "
                    "ORDER BY ordinal, translation LIMIT %(k)s").format(
                cols=SELECT_COLUMNS, table=sql.Identifier(request.table_name), span=span, where=where),
            {**span_params, **params, "k": request.k},
        ).fetchall()
        if rows:
            return SearchResponse(query, "reference", version, _results([Hit.of_row(row, 1.0) for row in rows]))
    labels = "; ".join(r.label for r in ranges)
    return SearchResponse(query, "reference", version, message=f"no verses of {labels} are in the index")


def _translation_preference(filters: Scope) -> list[str | None]:
    if filters.translation:
        return [filters.translation]
    return [DEFAULT_TRANSLATION, None]


def _vector_side(request: _Request, text: str, where, params, vector=None):
    """The query's vector (`vector` where it is already embedded) and, on the request's
    `vector_conn` (a connection of its own, None for none), its HNSW candidates, read as the same
    principals as the rest of the search."""
    if vector is None:
        vector = request.embedder.encode([text])[0]
    conn = request.vector_conn
    if conn is None:
        return vector, None
    with conn.transaction():
        security.act_as_reader(conn, request.filters.principals)
        return vector, candidates.vector_candidates(conn, request.table_name, vector, where, params, request.config)


@dataclass
class _Proposals:
    """What each retriever proposed for one query, before fusion: fusing them again under other
    weights reads nothing twice."""

    vector: object  # the query's embedding (None in lexical mode)
    near: list[tuple[str, float]] | None  # HNSW neighbours; None where the vector side did not run
    words: list[tuple[str, float]] | None  # BM25; None where the lexical side did not run
    titles: list[tuple[str, float]] | None  # pericope titles, where the lexical side ran with titles on
    where: sql.Composable
    params: list
    index: lexical.LexicalIndex  # the lexical side's, which the citation prior reads too
    # The other translations' BM25 as this translation's chunks; read for a topic-shaped query only.
    others: list[tuple[str, float]] | None = None


def _ranked(request: _Request, rows: sql.Composable | None = None) -> list[tuple[str, float]]:
    """(chunk_id, score) best first: vector, lexical, or both (with pericope titles and the
    cross-reference graph) fused by reciprocal rank fusion; `rows` narrows the rows ranked."""
    return _fused(request, _proposals(request, rows), request.config.lexical.weight)


def _proposals(request: _Request, rows: sql.Composable | None = None, vector=None) -> _Proposals:
    """Each retriever's candidates; `rows` narrows the rows ranked; `vector` is the query's
    embedding where it is already made. The vector side runs on the request's `vector_conn` where
    there is one, beside the lexical side."""
    conn, table_name, query, filters = request.conn, request.table_name, request.query, request.filters
    config, layout = request.config, request.layout
    translation = filters.translation or DEFAULT_TRANSLATION
    # The mirror ranks every matching chunk; SQL where there is none, or rows it cannot narrow to.
    index = lexical.choose(conn, table_name, layout, filters, translation, narrower=rows)
    where, params = index.rows.where, index.rows.params
    extra = expansion_words(query, config) if config.lexical.expand or config.vector.expand else ""
    vector = side = near = words = titles = others = None
    if config.embeds:
        # The model embeds the query (and a second connection reads its neighbours) while the
        # database answers the lexical side: each waits on its own core, not one after the other.
        text = f"{query} {extra}" if config.vector.expand and extra else query
        side = _EMBEDDING.submit(_vector_side, request, text, where, params, vector)
    try:
        if config.matches_words:
            found = index.proposals(query, extra if config.lexical.expand else "", config)
            words, titles = found.words, found.titles if config.titles.weight else None
        if rows is None and config.topics.other_translations_weight and topics.fused_again(query, config, filters):
            # Read while the vector side still walks the graph: a topic's is the longer walk.
            others = topics.other_translations(conn, table_name, query, filters, config, layout, translation)
    finally:
        if side is not None:
            wait([side])  # the second connection is the caller's again only once its reads are done
    if side is not None:
        vector, near = side.result()
        if near is None:
            near = candidates.vector_candidates(conn, table_name, vector, where, params, config)
    return _Proposals(vector, near, words, titles, where, params, index, others)


def _fused(request: _Request, found: _Proposals, lexical_weight: float, others_weight: float = 0.0,
           evidence: list[tuple[str, float]] | None = None) -> list[tuple[str, float]]:
    """The proposals fused, BM25 weighing `lexical_weight` (and the other translations' BM25,
    where it was read, `others_weight`; the passages other kinds speak for, `evidence`, where
    given, as EvidenceSettings weighs them); in a hybrid, with the cross-reference graph and the
    citation prior."""
    conn, table_name, config, layout = request.conn, request.table_name, request.config, request.layout
    # Vector first, as fusion has always taken them: ties keep that order.
    lists = [(weight, ranked) for weight, ranked in ((config.vector.weight, found.near), (lexical_weight, found.words),
                                                     (config.titles.weight, found.titles)) if ranked is not None]
    if others_weight and found.others is not None:
        lists.append((others_weight, found.others))
    if evidence:
        lists.append((config.evidence.weight, evidence))
    # Scores weigh in the hybrid only: vector and lexical stay the plain baselines they are.
    power = config.fusion.score_power if config.mode == HYBRID else 0.0
    fused = candidates.fuse(lists, config.fusion.rrf_k, power) if len(lists) > 1 else lists[0][1]
    if config.mode == HYBRID and config.xrefs.weight:
        linked = candidates.xref_candidates(conn, table_name, fused[: config.xrefs.seeds], found.vector,
                                            (found.where, found.params), config, layout)
        if linked:
            fused = candidates.fuse([*lists, (config.xrefs.weight, linked)], config.fusion.rrf_k, power)
    if config.mode == HYBRID and config.fusion.prominence_weight:
        fused = candidates.weigh_prominence(fused, config.fusion.prominence_weight, found.index.cited)
    return fused


def _is_topic(request: _Request, ranked) -> bool:
    """A short query that names no passage: its best hit is not a whole pericope."""
    if not ranked or not topics.topic_shaped(request.query, request.config, request.filters):
        return False
    best = hits_by_id(request.conn, request.table_name, ranked[:1])
    return bool(best) and best[0].granularity != "pericope"


def _ranking(request: _Request, vector=None,
             evidence: list[tuple[str, float]] | None = None) -> tuple[list[tuple[str, float]], object]:
    """The fused ranking (with `evidence`, where given), a topic's fused again, and the query's
    embedding (`vector` where it was already made)."""
    found = _proposals(request, vector=vector)
    return _ranked_from(request, found, evidence), found.vector


def _ranked_from(request: _Request, found: _Proposals,
                 evidence: list[tuple[str, float]] | None) -> list[tuple[str, float]]:
    """The proposals `found` fused (with `evidence`, where given), a topic's fused again."""
    config = request.config
    ranked = _fused(request, found, config.lexical.weight, evidence=evidence)
    if _is_topic(request, ranked):
        if config.topics.rows != "all":
            rows = topics.TOPIC_ROWS[config.topics.rows]
            ranked = _fused(request, _proposals(request, rows, found.vector), config.topics.lexical_weight,
                            evidence=evidence)
        else:
            ranked = _fused(request, found, config.topics.lexical_weight, config.topics.other_translations_weight,
                            evidence)
    return ranked


def _asks_evidence(request: _Request) -> bool:
    """A hybrid search narrowed to scripture hears the other kinds (EvidenceSettings)."""
    config = request.config
    return bool(config.evidence.weight) and request.filters.given.kind == "scripture" and config.mode == HYBRID


def _evidence(request: _Request) -> tuple[list[tuple[str, float]], object]:
    """The passages the unfiltered first hits of a search narrowed to scripture speak for, and the
    query's embedding. Read as the same caller, so only rows the caller may read speak."""
    evidence, given = request.config.evidence, request.filters.given
    wider = replace(request, filters=replace(request.filters, given=replace(given, kind=None)))
    ranked, vector = _ranking(wider)
    # The page the caller would have read unfiltered: the stages keep one hit per passage.
    page = [(hit.chunk_id, hit.refs, hit.score) for hit in _page(wider, ranked, evidence.depth)]
    where, params = request.filters.where(request.filters.translation or DEFAULT_TRANSLATION)
    return candidates.covered_passages(request.conn, request.table_name, page, where, params,
                                       evidence.max_verses), vector


def _evidence_on_own_connection(request: _Request) -> list[tuple[str, float]]:
    """_evidence on `request.conn`, a connection of its own, reading as the same principals."""
    with request.conn.transaction():
        security.act_as_reader(request.conn, request.filters.principals)
        return _evidence(request)[0]


def _ranked_search(request: _Request) -> SearchResponse:
    if not _asks_evidence(request):
        ranked, _ = _ranking(request)
    elif request.vector_conn is None:
        spoken, vector = _evidence(request)
        ranked, _ = _ranking(request, vector, spoken)
    else:
        # Two connections: the unfiltered ranking the evidence needs is read on the second while
        # the first reads the filtered retrievers, so the evidence costs about one ranking's time.
        beside = _BESIDE.submit(_evidence_on_own_connection, replace(request, conn=request.vector_conn, vector_conn=None))
        try:
            found = _proposals(replace(request, vector_conn=None))
        finally:
            wait([beside])  # the second connection is the caller's again only once its reads are done
        ranked = _ranked_from(request, found, beside.result())
    return SearchResponse(request.query, request.config.mode, request.version, _results(_page(request, ranked)))


def _page(request: _Request, ranked: list[tuple[str, float]], k: int | None = None) -> list[Hit]:
    """The first `k` (the request's by default) of the ranking, after the ranking stages."""
    conn, table_name, config, k = request.conn, request.table_name, request.config, k or request.k
    if config.stages.return_parents:
        ranked = rerank.parents_of(conn, table_name, ranked)
    pipeline = stages.build(config)
    # Read as deep as the deepest stage looks: those that drop hits, move them back or choose
    # among them see more than k.
    hits = hits_by_id(conn, table_name, ranked[:stages.pool_depth(pipeline, k)])
    context = stages.Context(conn, table_name, request.query, k, request.filters.given.kind)
    return stages.run(pipeline, hits, context)


def _word_study(request: _Request, word: word_study.WordQuery) -> SearchResponse | None:
    """The lexicon entry (exact, then fuzzy, then by meaning), then the WEB verses tagged with its
    Strong's number. None when a bare word turns out to be no transliteration: an ordinary search
    answers it instead."""
    conn, table_name, query, k, version = request.conn, request.table_name, request.query, request.k, request.version
    filters = request.filters
    entries = _lexicon_entries(request, word)
    if not entries:
        if word.how == "number":
            return SearchResponse(query, "word-study", version, message=f"no Strong's entry for {word.term!r} is in the index")
        return None
    table = sql.Identifier(table_name)
    numbers = list(dict.fromkeys(number for _, number in entries))
    where, params = filters.where(filters.translation or DEFAULT_TRANSLATION)
    # The query's words besides a number or Greek/Hebrew script ("G26 in John's letters", "the
    # Greek word for love") order the verses by meaning; a bare number or word lists them in
    # canonical order.
    rest = _NUMBER_OR_SCRIPT.sub(" ", query).strip()
    order = sql.SQL("ordinal")
    query_params: dict = {}
    if len(rest.split()) >= 2:
        order = sql.SQL("embedding <=> %(v)s")
        query_params = {"v": _EMBEDDING.submit(request.embedder.encode, [rest]).result()[0]}
    # Materialised so the planner filters by number first: an HNSW scan ordered by the query
    # would see only its nearest few hundred verses and could return fewer than k.
    verses = conn.execute(
        sql.SQL("WITH tagged AS MATERIALIZED (SELECT chunk_id, ordinal, embedding FROM {table} "
                "WHERE granularity = 'verse' AND (metadata -> 'strongs') ?| %(numbers)s AND {where}) "
                "SELECT chunk_id FROM tagged ORDER BY {order} LIMIT %(k)s").format(table=table, where=where, order=order),
        {"numbers": numbers, **params, **query_params, "k": k},
    ).fetchall()
    ids = [chunk_id for chunk_id, _ in entries] + [chunk_id for (chunk_id,) in verses]
    hits = hits_by_id(conn, table_name, [(chunk_id, 1.0) for chunk_id in ids[:k]])
    return SearchResponse(query, "word-study", version, _results(hits))


_NUMBER_OR_SCRIPT = re.compile(r"\b(?:strong'?s\s+)?[GH]\d{1,5}\b|[\u0370-\u03ff\u1f00-\u1fff\u0590-\u05ff]+", re.IGNORECASE)


def _lexicon_entries(request: _Request, word: word_study.WordQuery) -> list[tuple[str, str]]:
    """(chunk_id, Strong's number) of the entries the word names, best first."""
    conn, table = request.conn, sql.Identifier(request.table_name)
    # The caller's testament, genre or tradition filters narrow the verses, not the dictionary.
    lexicon = replace(request.filters, given=Filters(kind="lexicon"))
    where, params = lexicon.where(None)
    language = sql.SQL("TRUE")
    if word.language:
        language = sql.SQL("metadata ->> 'language' = %(language)s")
        params = {**params, "language": word.language}

    def matching(condition: str, order: str = "chunk_id", **values) -> list[tuple[str, str]]:
        # The entries are found first (through the dictionary's own indexes) and then ordered: a
        # plan that walks every chunk in `order` hoping to meet three soon reads them all when the
        # word is no dictionary word, as most short queries are not.
        return conn.execute(
            sql.SQL("WITH found AS MATERIALIZED (SELECT chunk_id, metadata FROM {table} WHERE kind = 'lexicon' "
                    "AND {language} AND {where} AND {condition}) "
                    "SELECT chunk_id, metadata ->> 'strongs' FROM found ORDER BY {order} LIMIT 3").format(
                table=table, language=language, where=where, condition=sql.SQL(condition), order=sql.SQL(order)),
            {**params, **values},
        ).fetchall()

    if word.how == "number":
        return matching("metadata ->> 'strongs' = %(term)s", term=word.term)
    if word.how == "script":
        term = plain_letters(word.term)
        return matching("metadata ->> 'lemma_plain' = %(term)s", term=term) or matching(
            "similarity(metadata ->> 'lemma_plain', %(term)s) > 0.4",
            "similarity(metadata ->> 'lemma_plain', %(term)s) DESC, chunk_id", term=term)
    if word.how == "transliteration":
        words = word.term.split()
        exact = matching("metadata ->> 'plain' = ANY(%(words)s)", words=words)
        if exact or not word.language:
            return exact
        return matching("similarity(metadata ->> 'plain', %(term)s) > 0.4",
                        "similarity(metadata ->> 'plain', %(term)s) DESC, chunk_id", term=word.term)
    # "the Greek word for love": first the entries whose definition holds the word, ranked by how
    # many WEB verses that say the word carry their number (the word the translators rendered so
    # most often); then, for a meaning no definition states, the entries nearest by hybrid search.
    used = _entries_by_use(conn, table, word, where, params, language)
    if used:
        return used
    ranked = _ranked(replace(
        request, query=word.term, filters=lexicon, vector_conn=None,
        # The word asked about, not its theological neighbours: "grace" must find charis, not
        # the words for mercy the expansion would add.
        config=request.config.but(xref_weight=0, title_weight=0, expand_lexical=False, expand_vector=False)))
    ids = [chunk_id for chunk_id, _ in ranked[:50]]
    return matching("chunk_id = ANY(%(ids)s)", "array_position(%(ids)s, chunk_id)", ids=ids)


def _entries_by_use(conn, table, word: word_study.WordQuery, where, params, language) -> list[tuple[str, str]]:
    return conn.execute(
        sql.SQL(
            """
            WITH uses AS (
                SELECT number, count(*) AS verses
                FROM {table}, jsonb_array_elements_text(metadata -> 'strongs') AS number
                WHERE granularity = 'verse' AND translation = %(translation)s
                  AND tsv @@ plainto_tsquery('english', %(term)s)
                GROUP BY number)
            SELECT e.chunk_id, e.metadata ->> 'strongs'
            FROM {table} e JOIN uses u ON u.number = e.metadata ->> 'strongs'
            WHERE e.kind = 'lexicon' AND {language} AND {where}
              AND e.tsv @@ plainto_tsquery('english', %(term)s)
            ORDER BY u.verses DESC, e.chunk_id
            LIMIT 3
            """
        ).format(table=table, language=language, where=where),
        {**params, "term": word.term, "translation": DEFAULT_TRANSLATION},
    ).fetchall()
