"""Which runtime and numerics run the model: torch (PyTorch eager, through sentence-transformers)
in fp32 or bf16 autocast, or onnx (ONNX Runtime over an export of the same weights,
lectio.embedding.onnx_runtime) in fp32.

A caller may name the backend (the Dagster EmbedderResource's `backend`); otherwise
LECTIO_EMBED_BACKEND=torch|onnx and LECTIO_EMBED_PRECISION=fp32|bf16|int8 choose. What they leave
open the machine chooses, by measurement (lectio.embedding.measurement): the candidates are the
runtimes this CPU runs natively (bf16 only with avx512_bf16 or amx_bf16; int8 only when asked,
its vectors are too far from fp32's), each embeds a few hundred real texts of the corpus's
length mix in rounds whose order turns round, and each is compared with torch fp32:

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
go on, up to measurement.MAX_ROUNDS, until each comparison is decided. Load that lasts slows both
sides of a round alike; a burst spoils one round, which the interval leaves out. Whether the
machine was quiet is still recorded, and decides only the query session's threads.

The outcome and its evidence are recorded in the home's model cache (backend.json) and read by
every later start: the runtime and numerics are part of the model id, so a choice that flipped
with a shared machine's noise would re-embed every source. It is measured again only on another
machine (CPU model, cores, onnxruntime or torch release), when the file is deleted, or by
`lectio model measure`, which reports the new choice; a home keeps its index's model until
`lectio migrate` builds the new one beside it.

The measurement is paid only where it pays back. A run settles the choice before it fixes its model
id (settle): a home whose sources read less than MEASURE_FROM_BYTES records a *provisional*
choice without measuring (the first candidate in ORDER, which reproduces fp32), so a few documents
are searchable in seconds rather than after minutes of rounds; the first run whose sources reach
it measures, and a provisional choice the measurement overturns is replaced like a new home's: that
run embeds every source with the measured runtime (at most MEASURE_FROM_BYTES of them were
embedded provisionally, about what the measurement itself costs).

The backend is part of the model id (`…+onnx`; torch adds nothing, so the ids made before this
backend existed keep naming torch's vectors), hence of the embedding cache key, of every source's
fingerprint and of the model an index version records.
"""

from __future__ import annotations

import contextlib
import json
import math
import logging
import os
import statistics
import threading
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from lectio.embedding import measurement, numerics, onnx_runtime, torch_runtime
from lectio.embedding.packaged import base_of, release_of
from lectio.settings import runtime_settings

BACKENDS = ("torch", "onnx")
DEFAULT = "torch"  # what a model id without a backend part names
# The precisions each backend runs: bf16 is torch's autocast; ONNX Runtime's int8 is its own
# dynamic quantizer (lectio.embedding.onnx_runtime).
PRECISIONS = {"torch": ("fp32", "bf16", "int8"), "onnx": ("fp32", "int8")}
# The candidates a machine measures, in order of preference on a tie: those that reproduce torch
# fp32 first, the one that needs no torch import first of them.
ORDER = (("onnx", "fp32"), ("torch", "fp32"), ("torch", "bf16"))
REFERENCE = ("torch", "fp32")
CHOICE_FILE = "backend.json"
TIE = 1.1  # a preferred candidate is kept unless another measured this much faster
# Retrieval-close to fp32: every vector within CLOSE_COSINE of fp32's, and each text's ten nearest
# texts (among the measurement texts) on average CLOSE_OVERLAP the same as fp32's: closer than
# the HNSW index's own approximation of exact search, which the index already accepts (its
# recall@20 against exact search is measured by benchmarks/search_latency.py). bf16 autocast
# measured min cosine 0.99997 (Intel Xeon with AMX, 2026-12-05); int8 (cosine 0.93) is far off.
CLOSE_COSINE = 0.9999
CLOSE_OVERLAP = 0.98
NEIGHBOURS = 10
# The inputs (bytes of the files a home's sources read; of a SWORD module, a `select`'s share) from
# which measuring the runtimes pays: the measurement takes half a minute on a quiet 2-core machine
# and up to two beside a busy core, and the fastest runtime it finds saves about a quarter of the
# embedding time (torch bf16 against ONNX fp32, 66 against 50 texts/s on an AMD EPYC with
# avx512_bf16). 2 MB is about 13,000 texts of a compressed SWORD module, four minutes of
# embedding, where the two are about even; a few documents or a demo's chapters stay far below.
MEASURE_FROM_BYTES = 2_000_000
# More intra-op threads for one query must make it this much faster at the median of the paired
# per-query ratios, in each of THREAD_ROUNDS rounds.
QUERY_THREADS_GAIN = 1.1
THREAD_ROUNDS = 3

log = logging.getLogger(__name__)


def requested() -> str | None:
    """LECTIO_EMBED_BACKEND (checked), None when unset."""
    return checked(runtime_settings().embed_backend, "LECTIO_EMBED_BACKEND")


def checked(value: str | None, setting: str = "the embedding backend") -> str | None:
    """`value` as a backend's name, None when blank; `setting` names it in the error."""
    chosen = (value or "").strip().lower()
    if not chosen:
        return None
    if chosen not in BACKENDS:
        raise ValueError(f"{setting} must be one of {', '.join(BACKENDS)}, not {chosen!r}")
    return chosen


def check(backend: str, precision: str) -> None:
    if precision not in PRECISIONS[backend]:
        raise ValueError(f"LECTIO_EMBED_PRECISION={precision} does not run on the {backend} embedding backend "
                         f"(it runs {', '.join(PRECISIONS[backend])}; set LECTIO_EMBED_BACKEND=torch for {precision})")


def key(runtime: tuple[str, str]) -> str:
    return "/".join(runtime)


def candidates(backend: str | None, precision: str | None, flags: set[str] | None = None) -> list[tuple[str, str]]:
    """The runtimes left open by what was asked: native to this CPU, installed, in ORDER."""
    if backend == "onnx":
        onnx_runtime.require()
    if backend and precision:
        check(backend, precision)
        return [(backend, precision)]
    native = numerics.offered(numerics.cpu_flags() if flags is None else flags)
    pool = [(b, p) for b, p in ORDER if backend in (None, b) and (p == precision or (precision is None and p in native))
            and (b != "onnx" or onnx_runtime.available())]
    if not pool:  # int8, or a precision no candidate runs: as asked, on torch unless told
        pool = [(backend or DEFAULT, precision or numerics.DEFAULT)]
        check(*pool[0])
    return pool


def choose(name: str, release: str, given: str | None = None) -> tuple[str, str]:
    """The (backend, precision) new embeddings are made with: what the caller, LECTIO_EMBED_BACKEND
    and LECTIO_EMBED_PRECISION fix, the rest by the home's record (measured first where there is
    none); logged once per process and record. Keyed by the record's stamp, so a long-lived process
    (the sensor daemon, the code server) follows a measurement that replaced a provisional choice."""
    return _choose(name, release, given, stamp(name, release))


@lru_cache(maxsize=4)
def _choose(name: str, release: str, given: str | None, _stamp: tuple | None) -> tuple[str, str]:
    pool = candidates(checked(given) or requested(), numerics.requested())
    if len(pool) == 1:
        log.info("embedding runtime %s (as set)", key(pool[0]))
        return pool[0]
    record = measured(name, release, pool)
    chosen = pick(record, pool)
    log.info("embedding runtime %s, %s (%s, %s cores; %s): %s; queries on %s. "
             "LECTIO_EMBED_BACKEND / LECTIO_EMBED_PRECISION override, `lectio model measure` measures again",
             key(chosen), "provisional" if record.get("provisional") else "measured on this machine",
             record["machine"]["cpu"], record["machine"]["cores"], rounds_told(record),
             _summary(record), key(query_runtime_of(record) or chosen))
    return chosen


def stamp(name: str, release: str, home: Path | None = None) -> tuple | None:
    """The home's record file as it stands (modified time and size), None where there is none."""
    name, release = _measured_as(name, release)
    try:
        found = (onnx_runtime.model_dir(name, release, home) / CHOICE_FILE).stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def settled(name: str, release: str, home: Path | None = None) -> bool:
    """Whether nothing is left to settle: the runtime is set, or this machine's is measured."""
    pool = candidates(requested(), numerics.requested())
    if len(pool) == 1:
        return True
    found = recorded(name, release, home)
    return _holds(found, pool) and not found.get("provisional")


def settle(name: str, release: str, inputs: int | None, home: Path | None = None) -> dict | None:
    """Give the home a runtime to ingest with before a run fixes its model id (and so every
    fingerprint): the record it has for this machine; else, where its sources' inputs (`inputs`,
    bytes; None where not known, as for a SWORD module not fetched yet) reach MEASURE_FROM_BYTES,
    the measured one, measured now (also in place of a provisional choice: the run then embeds
    every source with the measured runtime, as a new home's first run would); else a provisional
    choice, recorded without measuring. None where LECTIO_EMBED_BACKEND and
    LECTIO_EMBED_PRECISION leave nothing to choose."""
    pool = candidates(requested(), numerics.requested())
    if len(pool) == 1:
        return None
    if inputs is None or inputs >= MEASURE_FROM_BYTES:
        return measured(name, release, pool, home, provisional_ok=False)
    found = recorded(name, release, home)
    if _current(found, pool, inputs):
        return found
    return _provisional(name, release, pool, inputs, home)


def _current(found: dict | None, pool: list[tuple[str, str]], inputs: int) -> bool:
    """Whether `found` answers for this machine and `pool` and, where provisional, names what the
    inputs weigh now (`inputs`, bytes): the runtime line reports that figure, so a record kept
    from an earlier sources file would report that file's weight."""
    return _holds(found, pool) and (not found.get("provisional") or found["provisional"]["input_bytes"] == inputs)


def _provisional(name: str, release: str, pool: list[tuple[str, str]], inputs: int, home: Path | None) -> dict:
    """The choice of a home whose inputs do not pay for a measurement: the one it recorded on another
    machine where still open (a home keeps its index's model), else the first candidate in ORDER,
    which reproduces fp32 and, on ONNX, spares the torch import."""
    name, release = _measured_as(name, release)
    folder = onnx_runtime.model_dir(name, release, home)
    path = folder / CHOICE_FILE

    def provisional(found: dict | None) -> dict:
        kept = (found["backend"], found.get("precision", numerics.DEFAULT)) if found else None
        backend, precision = kept if kept in pool else pool[0]
        return {"backend": backend, "precision": precision,
                "query": {"backend": backend, "precision": precision} if precision == "fp32" else None,
                "provisional": {"input_bytes": inputs, "measure_from_bytes": MEASURE_FROM_BYTES},
                "machine": machine()}

    try:
        with onnx_runtime._locked(folder, ".choice.lock"):
            found = _read(path)
            if _current(found, pool, inputs):
                return found  # another process settled it meanwhile
            record = provisional(found)
            _write(path, record)
    except OSError as exc:  # a home that cannot be written: chosen, not recorded
        log.warning("cannot record the provisional embedding runtime in %s: %s", folder, exc)
        record = provisional(_read(path))
    return record | {"file": str(path)}


def _summary(record: dict) -> str:
    found = record.get("candidates") or {}
    return ", ".join(f"{k} {v['texts_per_second']:.0f} texts/s" for k, v in found.items() if v.get("texts_per_second")) \
        or ("nothing measured" if record.get("provisional") else "an earlier measurement")


def rounds_told(record: dict) -> str:
    """How many paired rounds the record's choice rests on, and whether the machine was quiet."""
    if record.get("provisional"):
        return (f"provisional, not measured: the sources' inputs ({record['provisional']['input_bytes']:,} bytes) "
                f"are below the {record['provisional']['measure_from_bytes']:,} a measurement pays for")
    times = [len(v["seconds"]) for v in (record.get("candidates") or {}).values() if "seconds" in v]
    quiet = "quiet" if record.get("quiet", True) else "not quiet"
    return f"{max(times)} paired rounds, {quiet}" if times else quiet


def pick(record: dict, pool: list[tuple[str, str]]) -> tuple[str, str]:
    """The recorded choice where it is open; else the best measured candidate of the pool."""
    chosen = (record["backend"], record.get("precision", numerics.DEFAULT))
    if chosen in pool:
        return chosen
    measured_here = {k: v for k, v in (record.get("candidates") or {}).items() if tuple(k.split("/")) in pool}
    if not measured_here:
        return pool[0]
    return decide(measured_here)["ingest"]


def machine() -> dict:
    """What a measurement holds for: another CPU, core count or runtime release is measured again."""
    return {"cpu": numerics.cpu_model(), "cores": onnx_runtime.cores(),
            "onnxruntime": onnx_runtime.runtime_version(), "torch": onnx_runtime._version("torch")}


def measured(name: str, release: str, pool: list[tuple[str, str]] | None = None, home: Path | None = None,
             again: bool = False, sample: int = measurement.TEXTS, provisional_ok: bool = True) -> dict:
    """The recorded measurement of this home for this machine, measured (and recorded) first if
    there is none that covers `pool` (all of ORDER when None), if `again`, or if it is provisional
    and not `provisional_ok`. An adapted model runs as its base does: the base is what is measured
    and recorded."""
    name, release = _measured_as(name, release)
    pool = pool or candidates(None, None)
    folder = onnx_runtime.model_dir(name, release, home)
    path = folder / CHOICE_FILE
    here = machine()

    def usable(found):
        return not again and _holds(found, pool, here) and (provisional_ok or not found.get("provisional"))

    record = _read(path)
    if usable(record):
        return record | {"file": str(path)}
    try:
        with onnx_runtime._locked(folder, ".choice.lock"):
            record = _read(path)
            if not usable(record):
                record = measure(name, release, pool, home, sample) | {"machine": here}
                _write(path, record)
    except OSError as exc:  # a home that cannot be written: measured, not recorded
        log.warning("cannot record the embedding runtime's measurement in %s: %s", folder, exc)
        record = measure(name, release, pool, home, sample) | {"machine": here}
    return record | {"file": str(path)}


def _measured_as(name: str, release: str) -> tuple[str, str]:
    """The model whose measurement answers for `name`: its base, where it is an adapted model
    (the same layers and shapes, so the same speed and the same numerics' behaviour)."""
    base = base_of(name)
    return (name, release) if base == name else (base, release_of(base))


def _holds(record: dict | None, pool: list[tuple[str, str]], here: dict | None = None) -> bool:
    """Whether a record answers for this machine (`here`, else machine()) and `pool`."""
    return record is not None and record.get("machine") == (here or machine()) and _covers(record, pool)


def _covers(record: dict, pool: list[tuple[str, str]]) -> bool:
    """A record answers for a pool that holds its choice (a home keeps its index's model) or
    whose every candidate it measured."""
    chosen = (record["backend"], record.get("precision", numerics.DEFAULT))
    return chosen in pool or all(key(c) in (record.get("candidates") or {}) for c in pool)


def recorded(name: str, release: str, home: Path | None = None) -> dict | None:
    """The home's recorded measurement as it stands, whatever machine made it; None if none (or
    one that does not parse as a record)."""
    return _read(record_file(name, release, home))


def record_file(name: str, release: str, home: Path | None = None) -> Path:
    """Where the home keeps the runtime record that answers for `name`."""
    name, release = _measured_as(name, release)
    return onnx_runtime.model_dir(name, release, home) / CHOICE_FILE


def _write(path: Path, record: dict) -> None:
    work = path.with_name(f".{CHOICE_FILE}.{os.getpid()}")
    work.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(work, path)


def _read(path: Path) -> dict | None:
    """The record at `path`; None where there is none or it does not parse as a record: ignored,
    so a run that needs one measures again, and nothing that reads it meets a wrong shape (a
    `"query": "onnx"` ended searches and runs in a TypeError)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return record if valid_record(record) else None


def valid_record(record: object) -> bool:
    """Whether `record` has the shape every reader of backend.json relies on (the choice, the
    machine, the query runtime, the provisional inputs, each candidate's evidence)."""
    return (isinstance(record, dict) and _runtime(record, default_precision=True)
            and isinstance(record.get("machine"), dict)
            and (record.get("query") is None or _runtime(record["query"]))
            and record.get("quiet", True) in (True, False)
            and _provisional_shape(record.get("provisional"))
            and _candidates_shape(record.get("candidates")))


def _runtime(found: object, default_precision: bool = False) -> bool:
    """A (backend, precision) this lectio runs; query session threads and spin are checked where
    read (query_session falls back to one thread)."""
    if not isinstance(found, dict) or found.get("backend") not in BACKENDS:
        return False
    precision = found.get("precision", numerics.DEFAULT) if default_precision else found.get("precision")
    return isinstance(precision, str) and precision in PRECISIONS[found["backend"]]


def _provisional_shape(provisional: object) -> bool:
    if provisional in (None, False):
        return True
    return isinstance(provisional, dict) and all(
        type(provisional.get(k)) is int and provisional[k] >= 0 for k in ("input_bytes", "measure_from_bytes"))


def _candidates_shape(candidates: object) -> bool:
    if candidates is None:
        return True
    return isinstance(candidates, dict) and all(isinstance(c, dict) and _candidate_shape(c) for c in candidates.values())


def _candidate_shape(found: dict) -> bool:
    """A runtime that could not run (its reason), or what was measured of it: its equivalence
    (which a timed one has), its speed."""
    if "reason" in found:
        return isinstance(found["reason"], str)
    same = found.get("equivalence")
    judged = same is None and "seconds" not in found or isinstance(same, dict) and isinstance(
        same.get("relation"), str) and all(_number(same.get(k)) for k in ("min_cosine", "neighbour_overlap"))
    timed = "seconds" not in found or (
        isinstance(found["seconds"], list) and found["seconds"] and all(map(_number, found["seconds"]))
        and _number(found.get("spread")))
    speed = found.get("texts_per_second") is None or _number(found["texts_per_second"])
    queries = found.get("query_ms")
    return judged and timed and speed and (
        queries is None or isinstance(queries, dict) and all(_number(queries.get(k)) for k in ("p50", "p95")))


def _number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def measure(name: str, release: str, pool: list[tuple[str, str]], home: Path | None = None,
            sample: int = measurement.TEXTS) -> dict:
    """Every candidate on `sample` measurement texts: its seconds taken in rounds, its vectors (from
    the rounds' own batches) compared with torch fp32's, its single-query latency; and the decision."""
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    texts, queries = measurement.texts(sample), measurement.queries()
    runners, found = {}, {}
    for runtime in pool:
        try:
            runners[key(runtime)] = _runner(name, release, runtime, home)
        except Exception as exc:  # noqa: BLE001 - whatever stops a runtime leaves the others
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            log.warning("embedding runtime %s cannot run here: %s", key(runtime), reason)
            found[key(runtime)] = {"reason": reason}
    batches = _Batches(texts, min(sample, measurement.TIMED_TEXTS), {k: run for k, (run, _) in runners.items()})
    if key(REFERENCE) in runners:
        reference = batches.vectors
    else:
        fixed = torch_runtime.vectors(name, batches.texts)
        reference = lambda: fixed  # noqa: E731 - the same call as batches.vectors

    def settled(seconds: dict[str, list[float]]) -> bool:
        if not batches.complete():  # every text embedded by every runtime: the equivalence can be judged
            return False
        return decided({k: s for k, s in seconds.items() if _close(found, batches, reference, k)})

    seconds, quiet = measurement.rounds({k: batches.timed(k) for k in runners}, settled)
    for k, times in seconds.items():
        if _close(found, batches, reference, k):
            found[k] |= {"seconds": times, "texts_per_second": round(batches.size / statistics.median(times), 1),
                         "spread": round(measurement.spread(times), 3), "query_ms": _latency(runners[k][1], queries)}
    record = decide(found) | {"candidates": found, "quiet": quiet, "texts": len(texts), "timed_texts": batches.size,
                              "measured_at": started}
    if record["query"] and record["query"]["backend"] == "onnx":
        record["query"] |= _query_threads(found, record["query"]["precision"], quiet, (name, release, home), queries)
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


def query_session(name: str, release: str, home: Path | None = None) -> tuple[int, bool]:
    """The ONNX query session's (intra-op threads, whether they spin within a run) as this home
    measured them on this machine; (1, False) where nothing was measured (or measured elsewhere,
    or before threads were). Read only, as query_runtime."""
    record = recorded(name, release, home)
    if record is None or record.get("machine") != machine():
        return 1, False
    query = record.get("query") or {}
    threads, spin = query.get("threads", 1), query.get("spin", False)
    if type(threads) is not int or not 1 <= threads <= onnx_runtime.cores() or type(spin) is not bool:
        return 1, False
    return threads, spin


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
    interval for the median, measurement.median_interval, lies above 1)."""
    interval = measurement.median_interval(gains)
    return interval is not None and interval[0] > 1 and statistics.median(gains) >= TIE


def decided(seconds: dict[str, list[float]]) -> bool:
    """Whether the rounds so far decide every comparison _ingest_choice makes: each other runtime
    is faster than the first, or surely not faster by TIE (its interval lies below TIE)."""
    first, *others = [c for c in ORDER if key(c) in seconds]
    for runtime in others:
        gains = ratios(seconds, runtime, first)
        interval = measurement.median_interval(gains)
        if interval is None or not (faster(gains) or interval[1] < TIE):
            return False
    return True


def query_runtime_of(record: dict | None) -> tuple[str, str] | None:
    """The runtime a record says queries run fastest on, where it is interchangeable with fp32:
    an fp32 one (a measurement records no other). A record naming another (int8 queries against
    an fp32 index, by hand or by a bad copy) is not obeyed: the version's own runtime embeds."""
    query = (record or {}).get("query")
    if query:
        return (query["backend"], query["precision"]) if query["precision"] == "fp32" else None
    # A record made before runtimes were measured together: ONNX where it matched torch.
    if record and "candidates" not in record and (record.get("equivalence") or {}).get("equivalent"):
        return "onnx", "fp32"
    return None


def query_runtime(name: str, release: str, version: tuple[str, str], home: Path | None = None) -> tuple[str, str]:
    """The runtime a query of a version made by `version` is embedded on: the home's recorded
    fastest runtime interchangeable with fp32, where the version's own vectors are fp32's or
    recorded close to them; else the version's own. Read only, never measured here (a search
    must not pay for a measurement)."""
    if version[1] not in ("fp32", "bf16"):
        return version
    record = recorded(name, release, home)
    if record is None or record.get("machine") != machine():
        return version
    if version[1] == "bf16":
        own = ((record.get("candidates") or {}).get(key(version)) or {}).get("equivalence") or {}
        if own.get("relation") != "close":
            return version
    fast = query_runtime_of(record)
    if fast is None or (fast[0] == "onnx" and not onnx_runtime.available()):
        return version
    return fast
