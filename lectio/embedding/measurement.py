"""Texts and rounds for measuring the embedding runtimes of a machine, and the measurement of the
candidates in them (measure): each one's seconds for a batch, its vectors, its latency for one
query, and on ONNX Runtime the query session's threads.

A decision that becomes part of an index's model id must not follow a shared machine's noise: it
is measured on a few hundred real texts in the corpus's length mix (short verses and answers,
paragraphs, chunks that fill the model's window), each runtime timed in every round with the
order turned round from one round to the next. A machine in use is the normal case, so what is
compared is each round's ratio between two runtimes, timed back to back: load that lasts slows
both sides of a pair alike, and a burst that falls on one side spoils one round, which the
interval for the ratios' median (distribution-free, by the sign test: lectio.embedding.comparison)
leaves out once there are rounds enough. The rounds go on until the comparisons they are for are
decided, up to MAX_ROUNDS. The rounds' spread and the CPU time other processes took meanwhile are
kept as the evidence of how quiet the machine was.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import logging
import os
import random
import statistics
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from lectio.embedding import onnx_runtime, torch_runtime
from lectio.embedding.backends import REFERENCE, key
from lectio.embedding.comparison import decide, decided, relation, threads_choice

# Word counts of the texts measured: the corpus's mix of verse-sized, paragraph-sized and
# window-filling chunks (most ingest time goes to the long ones).
LENGTH_MIX = ((0.40, 12, 40), (0.35, 60, 140), (0.25, 160, 230))
TEXTS = 256
# Each round times one batch of TIMED_TEXTS (the runtimes' own batch size), the next of the TEXTS,
# so more paired rounds fit in the same minutes; the first pass over the TEXTS also gives the
# vectors each runtime's equivalence is judged on (measure). Under steady load a decision may take
# all MAX_ROUNDS: about two minutes beside a busy core. Measured beside other work (AMD EPYC with
# avx512_bf16): bf16 over ONNX fp32 1.32x on 64 texts, 1.25x on 128, 1.23x on 256.
TIMED_TEXTS = 64
QUERIES = 48
# A runtime's rounds may differ by this much (slowest over fastest, less one) on a quiet machine.
QUIET_SPREAD = 0.15
# Five rounds are the fewest whose sign-test interval reaches comparison.CONFIDENCE; eleven leave
# two bursts out.
MIN_ROUNDS, MAX_ROUNDS = 5, 11
# The share of every core's time that other processes may take during the rounds of a quiet
# machine. Measured here: an HNSW build at `nice -n 19` beside the rounds made every runtime 4-5x
# slower while the rounds still agreed within 3-6 %.
OTHERS_SHARE = 0.2
# The rounds of queries that decide the ONNX query session's threads (comparison.threads_choice).
THREAD_ROUNDS = 3

log = logging.getLogger(__name__)


def _prose() -> list[str]:
    """The Westminster Standards' text as shipped in a package lectio depends on: real prose of
    the kind lectio indexes, present on every install before any corpus is fetched."""
    path = importlib.resources.files("westminster_cli") / "data" / "standards.json"
    documents = json.loads(path.read_text(encoding="utf-8"))["documents"]
    return [" ".join(str(entry.get(field) or "") for field in ("question", "answer", "text")).strip()
            for document in documents for entry in document["entries"]]


def texts(count: int = TEXTS, seed: int = 7) -> list[str]:
    """`count` spans of real prose with the corpus's length mix, the same every time."""
    words = " ".join(_prose()).split()
    pick = random.Random(seed)
    found = []
    for share, low, high in LENGTH_MIX:
        for _ in range(round(count * share)):
            size = pick.randint(low, high)
            start = pick.randrange(0, len(words) - size)
            found.append(" ".join(words[start:start + size]))
    return found[:count]


def queries(count: int = QUERIES, seed: int = 11) -> list[str]:
    """Query-sized spans (two to twelve words) of the same prose."""
    words = " ".join(_prose()).split()
    pick = random.Random(seed)
    spans = []
    for _ in range(count):
        size = pick.randint(2, 12)
        start = pick.randrange(0, len(words) - size)
        spans.append(" ".join(words[start:start + size]))
    return spans


def spread(seconds: list[float]) -> float:
    return max(seconds) / min(seconds) - 1


def rounds(runs: dict[str, Callable[[], object]],
           settled: Callable[[dict[str, list[float]]], bool] | None = None) -> tuple[dict[str, list[float]], bool]:
    """Each run timed once per round, the order reversed every other round, until `settled` says
    the seconds decide what they are for (by default: every run's spread is within QUIET_SPREAD),
    after at least MIN_ROUNDS, or MAX_ROUNDS have passed; the seconds, and whether the machine was
    quiet enough."""
    settled = settled or quiet
    names = list(runs)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    others = Others()
    for round_ in range(MAX_ROUNDS):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            started = time.perf_counter()
            runs[name]()
            seconds[name].append(round(time.perf_counter() - started, 4))
        if round_ + 1 >= MIN_ROUNDS and settled(seconds):
            break
    return seconds, quiet(seconds) and others.left_the_cores()


def quiet(seconds: dict[str, list[float]]) -> bool:
    return all(spread(s) <= QUIET_SPREAD for s in seconds.values())


class Others:
    """The CPU time every other process took from the moment this is made: the machine's busy
    time (/proc/stat, time stolen by the hypervisor included) less this process's own."""

    def __init__(self):
        self.wall, self.own, self.busy = time.perf_counter(), time.process_time(), busy_seconds()

    def share(self) -> float | None:
        """Their time as a share of every core's time since; None where /proc/stat is not there."""
        busy = busy_seconds()
        if busy is None or self.busy is None:
            return None
        wall = time.perf_counter() - self.wall
        theirs = (busy - self.busy) - (time.process_time() - self.own)
        return max(theirs, 0.0) / (wall * (os.cpu_count() or 1)) if wall > 0 else 0.0

    def left_the_cores(self) -> bool:
        share = self.share()
        if share is not None and share > OTHERS_SHARE:
            log.info("other processes took %.0f%% of the cores during the rounds: not quiet", share * 100)
            return False
        return True


def busy_seconds(stat: Path = Path("/proc/stat")) -> float | None:
    """Seconds every core of the machine has spent busy since boot (Linux), or None."""
    try:
        fields = [int(v) for v in stat.read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def measure(name: str, release: str, pool: list[tuple[str, str]], home: Path | None = None,
            sample: int = TEXTS) -> dict:
    """Every candidate on `sample` measurement texts: its seconds taken in rounds, its vectors (from
    the rounds' own batches) compared with torch fp32's, its single-query latency; and the decision."""
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    sample_texts, sample_queries = texts(sample), queries()
    runners, found = {}, {}
    for runtime in pool:
        try:
            runners[key(runtime)] = _runner(name, release, runtime, home)
        except Exception as exc:  # noqa: BLE001 - whatever stops a runtime leaves the others
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            log.warning("embedding runtime %s cannot run here: %s", key(runtime), reason)
            found[key(runtime)] = {"reason": reason}
    batches = _Batches(sample_texts, min(sample, TIMED_TEXTS), {k: run for k, (run, _) in runners.items()})
    if key(REFERENCE) in runners:
        reference = batches.vectors
    else:
        fixed = torch_runtime.vectors(name, batches.texts)
        reference = lambda: fixed  # noqa: E731 - the same call as batches.vectors

    def settled(seconds: dict[str, list[float]]) -> bool:
        if not batches.complete():  # every text embedded by every runtime: the equivalence can be judged
            return False
        return decided({k: s for k, s in seconds.items() if _close(found, batches, reference, k)})

    seconds, quiet = rounds({k: batches.timed(k) for k in runners}, settled)
    for k, times in seconds.items():
        if _close(found, batches, reference, k):
            found[k] |= {"seconds": times, "texts_per_second": round(batches.size / statistics.median(times), 1),
                         "spread": round(spread(times), 3), "query_ms": _latency(runners[k][1], sample_queries)}
    record = decide(found) | {"candidates": found, "quiet": quiet, "texts": len(sample_texts),
                              "timed_texts": batches.size, "measured_at": started}
    if record["query"] and record["query"]["backend"] == "onnx":
        record["query"] |= _query_threads(found, record["query"]["precision"], quiet, (name, release, home),
                                          sample_queries)
    return record


class _Batches:
    """The measurement texts in batches of `size`, one a round: each round every runtime embeds the
    next batch, and the first pass over them gives each runtime's vectors of every text (in the
    batches' order, `texts`), on which its equivalence to torch fp32 is judged, so the texts are
    embedded once for both. Each batch takes every n-th text, so each has the texts' length mix.
    Each runtime embeds a few texts first, outside the clock, so no round pays a first call's setup."""

    def __init__(self, texts: list[str], size: int, runners: dict):
        self.size, self.runners = size, runners
        count = -(-len(texts) // size)
        self.parts = [texts[i::count] for i in range(count)]
        self.texts = [text for part in self.parts for text in part]
        self.made: dict[str, list[np.ndarray]] = {k: [] for k in runners}
        self.calls = dict.fromkeys(runners, 0)
        for run in runners.values():
            run(texts[:8])

    def timed(self, k: str):
        def once():
            vectors = self.runners[k](self.parts[self.calls[k] % len(self.parts)])
            if self.calls[k] < len(self.parts):
                self.made[k].append(np.asarray(vectors))
            self.calls[k] += 1
        return once

    def complete(self) -> bool:
        return all(calls >= len(self.parts) for calls in self.calls.values())

    def vectors(self, k: str = key(REFERENCE)) -> np.ndarray:
        """Runtime `k`'s vectors of every text; the batches it has not embedded yet are embedded now."""
        while self.calls[k] < len(self.parts):
            self.timed(k)()
        return np.concatenate(self.made[k])


def _close(found: dict, batches: _Batches, reference, k: str) -> bool:
    """Whether runtime `k`'s vectors are close enough to torch fp32's to ingest with; judged once,
    and kept in `found` as its equivalence. `reference()` gives torch fp32's vectors."""
    if "equivalence" not in found.setdefault(k, {}):
        found[k]["equivalence"] = relation(batches.vectors(k), reference())
    return found[k]["equivalence"]["relation"] != "apart"


def _query_threads(found: dict, precision: str, quiet: bool, model: tuple, queries: list[str]) -> dict:
    """The ONNX query session's threads: more than one only on the word of a quiet machine; a busy
    one keeps one thread, the choice that never takes the core a search's lexical side works on."""
    if not quiet:
        return {"threads": 1, "spin": False}
    name, release, home = model
    path = onnx_runtime.ensure_export(name, release, precision, home)
    threads = found[key(("onnx", precision))]["query_threads"] = query_threads_measured(path, name, queries)
    return {"threads": threads["threads"], "spin": threads["spin"]}


def _runner(name: str, release: str, runtime: tuple[str, str], home: Path | None):
    """(embed a batch, embed one query) for a runtime."""
    backend, precision = runtime
    if backend == "onnx":
        model = onnx_runtime.OnnxModel(onnx_runtime.ensure_export(name, release, precision, home), name=name)
        return (lambda texts: model.encode(texts, kind="batch")), (lambda query: model.encode([query], kind="query"))
    return ((lambda texts: torch_runtime.vectors(name, texts, 64, precision)),
            (lambda query: torch_runtime.vectors(name, [query], 1, precision)))


def _latency(embed_one, queries: list[str]) -> dict:
    embed_one(queries[0])
    times = []
    for query in queries:
        started = time.perf_counter()
        embed_one(query)
        times.append((time.perf_counter() - started) * 1000)
    return _p50_p95(times)


def query_threads_measured(path: Path, name: str, queries: list[str], rounds: int = THREAD_ROUNDS) -> dict:
    """One query's latency (ms) on ONNX Runtime's query session with one intra-op thread and with
    every core (spinning within a run, and not), alternating query by query, alone and beside a
    busy core; and the setting chosen by it (threads_choice)."""
    many = onnx_runtime.cores()
    if many < 2:
        return {"threads": 1, "spin": False}
    settings = {"1": (1, False), str(many): (many, False), f"{many}+spin": (many, True)}
    models = {label: onnx_runtime.OnnxModel(path, name=name, query=query) for label, query in settings.items()}
    alone = _alternating(models, queries, rounds)
    with _busy_core(onnx_runtime.OnnxModel(path, name=name), queries):
        beside = _alternating(models, queries, rounds)
    threads, spin = settings[threads_choice(alone, beside, rounds)]
    return {"alone": _percentiles(alone), "beside_a_busy_core": _percentiles(beside), "threads": threads, "spin": spin}


def _alternating(models: dict, queries: list[str], rounds: int) -> dict[str, list[float]]:
    """Each query embedded by every model in turn, the order turned round from query to query,
    so a burst of the machine's other work falls on all alike."""
    for model in models.values():
        model.encode([queries[0]], kind="query")
    names = list(models)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i, query in enumerate(queries * rounds):
        turn = i % len(names)
        for n in names[turn:] + names[:turn]:
            started = time.perf_counter()
            models[n].encode([query], kind="query")
            times[n].append((time.perf_counter() - started) * 1000)
    return times


@contextlib.contextmanager
def _busy_core(model, queries: list[str]):
    """Another thread embedding queries meanwhile: a core as busy as a hybrid search's lexical side
    keeps one while its query is embedded."""
    stop = threading.Event()

    def work():
        while not stop.is_set():
            model.encode([queries[0]], kind="query")

    worker = threading.Thread(target=work, name="lectio-busy-core", daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join()


def _percentiles(times: dict[str, list[float]]) -> dict:
    return {n: _p50_p95(t) for n, t in times.items()}


def _p50_p95(milliseconds: list[float]) -> dict:
    return {"p50": round(float(np.percentile(milliseconds, 50)), 2), "p95": round(float(np.percentile(milliseconds, 95)), 2)}
