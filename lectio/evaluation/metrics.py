"""Scoring retrieval against labelled query sets, with the metrics: recall@k, precision@5, MRR,
nDCG@10, negative recall, qualifier presence, budget recall.

A result covers the verse refs it contains (one for a verse, the range for a pericope), so
granularities are compared fairly; budget recall charges large chunks for the tokens they use.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from lectio.embedding.model import count_tokens

TOKEN_BUDGET = 1000
METRICS = (
    "recall@5",
    "recall@10",
    "recall@20",
    "precision@5",
    "mrr",
    "ndcg@10",
    "negative_recall",
    "qualifier_presence",
    "budget_recall@1000",
)


class Hit(Protocol):
    refs: Sequence[str]
    text: str


@dataclass(frozen=True)
class LabelledQuery:
    id: str
    query: str
    relevant: frozenset[str]
    should_not_appear: frozenset[str] = frozenset()
    must_include_text: tuple[str, ...] = ()
    principals: tuple[str, ...] = ()
    filters: dict | None = None


def score_query(q: LabelledQuery, hits: Sequence[Hit], k: int = 20) -> dict[str, float | None]:
    """Metrics for one query; None where the query does not define a metric."""
    top = list(hits[:k])
    covers = [bool(set(h.refs) & q.relevant) for h in top]
    scores: dict[str, float | None] = dict.fromkeys(METRICS)
    if q.relevant:
        for cutoff in (5, 10, 20):
            scores[f"recall@{cutoff}"] = _recall(q.relevant, top[:cutoff])
        scores["precision@5"] = sum(covers[:5]) / 5
        first = next((rank for rank, hit in enumerate(covers, start=1) if hit), None)
        scores["mrr"] = 1 / first if first else 0.0
        # A gain is a hit that covers a relevant ref no better-ranked hit covered: a verse, its
        # paragraph and its pericope are not three answers, and nDCG stays within [0, 1].
        seen: set[str] = set()
        dcg = 0.0
        for rank, hit in enumerate(top[:10], start=1):
            new = (set(hit.refs) & q.relevant) - seen
            if new:
                dcg += 1 / math.log2(rank + 1)
                seen |= new
        ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(q.relevant), 10) + 1))
        scores["ndcg@10"] = dcg / ideal
        scores["budget_recall@1000"] = _recall(q.relevant, _within_budget(top, TOKEN_BUDGET))
    if q.should_not_appear:
        seen = {ref for h in top[:10] for ref in h.refs}
        scores["negative_recall"] = 0.0 if seen & q.should_not_appear else 1.0
    if q.must_include_text:
        text = "\n".join(h.text for h in top).lower()
        scores["qualifier_presence"] = float(all(s.lower() in text for s in q.must_include_text))
    return scores


def _recall(relevant: frozenset[str], hits: Sequence[Hit]) -> float:
    covered = {ref for h in hits for ref in h.refs} & relevant
    return len(covered) / len(relevant)


def _within_budget(hits: Sequence[Hit], budget: int) -> list[Hit]:
    """Results in rank order until their word pieces would pass the budget."""
    taken, used = [], 0
    for hit, tokens in zip(hits, count_tokens([h.text for h in hits])):
        if used + tokens > budget:
            break
        taken.append(hit)
        used += tokens
    return taken


def evaluate(
    queries: Sequence[LabelledQuery], retrieve: Callable[[LabelledQuery], Sequence[Hit]], k: int = 20
) -> dict:
    """`{"overall": {metric: mean, "n": scored}, "queries": [...]}` as `lectio eval --json` prints."""
    per_query, latencies = [], []
    for q in queries:
        started = time.perf_counter()
        hits = retrieve(q)
        latencies.append((time.perf_counter() - started) * 1000)
        scores = score_query(q, hits, k)
        per_query.append(
            {"id": q.id, "query": q.query, **scores, "top": [list(h.refs)[:3] for h in hits[:5]]}
        )
    overall: dict[str, float | int | None] = {}
    for metric in METRICS:
        values = [row[metric] for row in per_query if row[metric] is not None]
        overall[metric] = round(sum(values) / len(values), 4) if values else None
    overall["n"] = len(per_query)
    # Speed beside quality: the retrieval calls of this evaluation, warm, in this process.
    overall["latency_ms"] = _latency(latencies)
    return {"overall": overall, "queries": per_query}


def _latency(milliseconds: list[float]) -> dict[str, float | None]:
    if not milliseconds:
        return {"p50": None, "p95": None, "max": None}
    ordered = sorted(milliseconds)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))], 1)

    return {"p50": at(0.5), "p95": at(0.95), "max": round(ordered[-1], 1)}


def evaluate_index(conn, queries, *, k: int = 20, version: str | None = None, baselines: bool = False,
                   config=None) -> dict:
    """Score one index version (default: the live one) with the same search users get, as
    `config` ranks (the defaults when None; its mode is the report's); with `baselines`, also the
    plain designs of lectio.evaluation.baselines on the same version. A query longer than a
    search takes is scored on its first MAX_QUERY_CHARS characters, counted as `queries_cut`."""
    from lectio.embedding.model import Embedder
    from lectio.index import versions
    from lectio.retrieval import DEFAULT_PRINCIPALS, Filters, MAX_QUERY_CHARS, SearchConfig, SearchRequest, search

    # The version's queries embedded as a search embeds them, whatever runtime this home ingests with.
    info = versions.get_version(conn, version)
    embedder = Embedder.for_queries_of(info.model_id) if info is not None else Embedder()
    config, queries = config or SearchConfig(), list(queries)
    labelled = [
        LabelledQuery(
            id=q.id,
            # A search refuses a longer query, so a caller can shorten it; a labelled set is scored
            # whole, each query on what the cap lets a search read (the report counts those cut).
            query=q.query[:MAX_QUERY_CHARS],
            relevant=frozenset(q.relevant_set),
            should_not_appear=frozenset(q.should_not_appear),
            must_include_text=tuple(q.must_include_text),
            principals=tuple(q.principals),
            filters=dict(q.filters or {}),
        )
        for q in queries
    ]

    def retrieve(q: LabelledQuery):
        request = SearchRequest(q.query, k=k, principals=q.principals or DEFAULT_PRINCIPALS,
                                filters=Filters(**(q.filters or {})), version=version, config=config)
        response = search(conn, request, embedder=embedder)
        return response.results

    report = evaluate(labelled, retrieve, k)
    report["overall"]["queries_cut"] = sum(len(q.query) > MAX_QUERY_CHARS for q in queries)
    report["index_version"] = version
    report["mode"] = config.mode
    if baselines:
        report["baselines"] = _baselines(conn, labelled, version, embedder, k)
    return report


def _baselines(conn, labelled: list[LabelledQuery], version: str | None, embedder, k: int) -> dict[str, dict]:
    """`overall` of each plain design (lectio.evaluation.baselines) on the same queries and version."""
    from lectio.evaluation.baselines import BASELINES, Baselines, query_terms
    from lectio.index import versions

    plain = Baselines(conn, version or versions.live_version(conn), embedder)
    terms = {q.id: query_terms(conn, q.query) for q in labelled}
    return {name: evaluate(labelled, lambda q, name=name: plain.retrieve(name, q.query, terms[q.id], k), k)["overall"]
            for name in BASELINES}
