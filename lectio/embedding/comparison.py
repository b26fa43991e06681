"""How the measured runtimes compare: each one's vectors with torch fp32's (the equivalence), their
seconds with each other's (the paired rounds' ratios), and the choices those comparisons decide.

Each candidate's vectors of the measurement texts are compared with torch fp32's:

- *interchangeable* (min cosine >= 0.99999, max |Δ| <= 1e-4: ONNX fp32): the same vectors, so
  one may embed the queries of a version the other built;
- *retrieval-close* (min cosine >= CLOSE_COSINE and, on average, CLOSE_OVERLAP of each text's
  ten nearest texts the same as fp32's: bf16 autocast): its vectors carry a model id of their own
  (a version built with them is judged by the migration gate like any other), and its queries
  may be embedded by an interchangeable fp32 runtime;
- anything else is not a candidate.

Ingest takes the fastest candidate by median seconds; a candidate within TIE of the fastest that
reproduces fp32 (ONNX, then torch) wins the tie. Queries take the fastest runtime allowed for the
version (median of single-query latencies), ONNX on a tie, since it also spares the process the
torch import. On ONNX Runtime, the query session runs on every core instead of one (its threads
spinning within a run, or not) only where that measured faster (QUERY_THREADS_GAIN at the median
of the queries' paired ratios, in every round) and no slower at p95 beside a busy core (within
TIE), as a hybrid search embeds its query while the lexical side works on the other core;
neither changes the vectors.

A machine in use is the normal case, so the ingest choice never rests on whether it was quiet: the
first candidate in ORDER stays unless another is faster by the paired rounds' evidence (faster():
its median ratio at least TIE, and the sign-test interval for that median above 1), and the rounds
go on, up to measurement.MAX_ROUNDS, until each comparison is decided (decided()). Load that lasts
slows both sides of a round alike; a burst spoils one round, which the interval leaves out. Whether
the machine was quiet is still recorded, and decides only the query session's threads.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from lectio.embedding import numerics, onnx_runtime
from lectio.embedding.backends import DEFAULT, ORDER, REFERENCE, key

TIE = 1.1  # a preferred candidate is kept unless another measured this much faster
# Retrieval-close to fp32: every vector within CLOSE_COSINE of fp32's, and each text's ten nearest
# texts (among the measurement texts) on average CLOSE_OVERLAP the same as fp32's: closer than
# the HNSW index's own approximation of exact search, which the index already accepts (its
# recall@20 against exact search is measured by benchmarks/search_latency.py). bf16 autocast
# measured min cosine 0.99997 (Intel Xeon with AMX, 2026-12-05); int8 (cosine 0.93) is far off.
CLOSE_COSINE = 0.9999
CLOSE_OVERLAP = 0.98
NEIGHBOURS = 10
# More intra-op threads for one query must make it this much faster at the median of the paired
# per-query ratios, in each of the rounds measured (measurement.THREAD_ROUNDS).
QUERY_THREADS_GAIN = 1.1
# How sure the interval for the median of the rounds' ratios is: five rounds are the fewest that
# reach it (measurement.MIN_ROUNDS).
CONFIDENCE = 0.9


def relation(vectors: np.ndarray, reference: np.ndarray) -> dict:
    """How close a runtime's vectors are to torch fp32's, for retrieval: interchangeable, close
    or apart (see the module's notes), with what was measured."""
    found = onnx_runtime.equivalence(vectors, reference)
    found["neighbour_overlap"] = round(neighbour_overlap(vectors, reference), 4)
    if found["equivalent"]:
        found["relation"] = "interchangeable"
    elif found["min_cosine"] >= CLOSE_COSINE and found["neighbour_overlap"] >= CLOSE_OVERLAP:
        found["relation"] = "close"
    else:
        found["relation"] = "apart"
    return found


def neighbour_overlap(vectors: np.ndarray, reference: np.ndarray, k: int = NEIGHBOURS) -> float:
    """The mean share of each text's k nearest other texts by `vectors` that are among its k
    nearest by `reference`: recall@k of one set of vectors against the other."""
    mine, theirs = vectors @ vectors.T, reference @ reference.T
    np.fill_diagonal(mine, -np.inf)
    np.fill_diagonal(theirs, -np.inf)
    near, truth = np.argsort(-mine, axis=1)[:, :k], np.argsort(-theirs, axis=1)[:, :k]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(near, truth)]))


def decide(found: dict) -> dict:
    """The ingest runtime (_ingest_choice) and the queries' (fastest median latency among those
    interchangeable with fp32, ONNX within TIE)."""
    timed = [c for c in ORDER if "seconds" in found.get(key(c), {})]
    if not timed:
        return {"backend": DEFAULT, "precision": numerics.DEFAULT, "ingest": REFERENCE, "reason": "nothing could be measured"}
    chosen = _ingest_choice({key(c): found[key(c)]["seconds"] for c in timed})
    exact = [c for c in timed if found[key(c)]["equivalence"]["relation"] == "interchangeable"]
    fast_queries = [c for c in exact if "query_ms" in found[key(c)]]
    query = None
    if fast_queries:
        quickest = min(found[key(c)]["query_ms"]["p50"] for c in fast_queries)
        query = next(c for c in fast_queries if found[key(c)]["query_ms"]["p50"] <= quickest * TIE)
    return {"backend": chosen[0], "precision": chosen[1], "ingest": chosen,
            "query": {"backend": query[0], "precision": query[1]} if query else None}


def _ingest_choice(seconds: dict[str, list[float]]) -> tuple[str, str]:
    """The first runtime in ORDER, unless others were faster than it (faster()); then the fastest
    of those by median ratio, one earlier in ORDER within TIE of it winning."""
    first, *others = [c for c in ORDER if key(c) in seconds]
    gains = {c: ratios(seconds, c, first) for c in others}
    winners = {c: statistics.median(r) for c, r in gains.items() if faster(r)}
    if not winners:
        return first
    best = max(winners.values())
    return next(c for c in others if c in winners and winners[c] * TIE >= best)


def ratios(seconds: dict[str, list[float]], one: tuple[str, str], other: tuple[str, str]) -> list[float]:
    """How many times faster `one` ran than `other` in each round (timed back to back)."""
    return [b / a for a, b in zip(seconds[key(one)], seconds[key(other)])]


def faster(gains: list[float]) -> bool:
    """Faster by the rounds' evidence: by TIE at the median ratio, and surely faster at all (the
    interval for the median, median_interval, lies above 1)."""
    interval = median_interval(gains)
    return interval is not None and interval[0] > 1 and statistics.median(gains) >= TIE


def decided(seconds: dict[str, list[float]]) -> bool:
    """Whether the rounds so far decide every comparison _ingest_choice makes: each other runtime
    is faster than the first, or surely not faster by TIE (its interval lies below TIE)."""
    first, *others = [c for c in ORDER if key(c) in seconds]
    for runtime in others:
        gains = ratios(seconds, runtime, first)
        interval = median_interval(gains)
        if interval is None or not (faster(gains) or interval[1] < TIE):
            return False
    return True


def threads_choice(alone: dict[str, list[float]], beside: dict[str, list[float]], rounds: int = 1) -> str:
    """Of the query sessions measured ("1" the one-thread one), the one whose per-query ratio to
    one thread alone has the best median, where that median is at least QUERY_THREADS_GAIN in
    every one of the `rounds` (a burst of other work must not decide it) and its p95 beside a busy
    core is within TIE of one thread's; else "1"."""
    one = np.asarray(alone["1"])
    limit = np.percentile(beside["1"], 95) * TIE

    def gain(times: list[float]) -> float:
        return min(float(np.median(r)) for r in np.array_split(one / np.asarray(times), rounds))

    gains = {label: gain(times) for label, times in alone.items() if label != "1"}
    fit = {label: ratio for label, ratio in gains.items()
           if ratio >= QUERY_THREADS_GAIN and np.percentile(beside[label], 95) <= limit}
    return max(fit, key=fit.get) if fit else "1"


def median_interval(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """An interval holding the median of what `values` sample with at least `confidence`, whatever
    their distribution (the sign test): the k-th smallest and k-th largest value, k as large as
    that allows; None where there are too few values for any."""
    n, ordered = len(values), sorted(values)
    k = 0
    while k < n // 2 and 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n >= confidence:
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k else None
