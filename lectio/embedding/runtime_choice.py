"""Which runtime new embeddings and queries are made with, and when a run settles it: what the
caller and the settings fix, the rest by the home's runtime record for this machine
(lectio.embedding.runtime_record), measured first (lectio.embedding.measurement) where there is
none, and chosen by what the measurement compared (lectio.embedding.comparison).

The measurement is paid only where it pays back. A run settles the choice before it fixes its model
id (settle): a home whose sources read less than MEASURE_FROM_BYTES records a *provisional*
choice without measuring (the first candidate in ORDER, which reproduces fp32), so a few documents
are searchable in seconds rather than after minutes of rounds; the first run whose sources reach
it measures, and a provisional choice the measurement overturns is replaced like a new home's: that
run embeds every source with the measured runtime (at most MEASURE_FROM_BYTES of them were
embedded provisionally, about what the measurement itself costs).

A query is embedded on the fastest runtime the record allows for its version's vectors
(query_runtime), and on ONNX Runtime with the query session's threads it measured
(query_session); both only read the record, since a search must not pay for a measurement.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from lectio.embedding import measurement, numerics, onnx_runtime, runtime_record
from lectio.embedding.backends import candidates, checked, key, requested
from lectio.embedding.comparison import decide
from lectio.embedding.runtime_record import CHOICE_FILE, holds, machine, measured_as, recorded, stamp

# The inputs (bytes of the files a home's sources read; of a SWORD module, a `select`'s share) from
# which measuring the runtimes pays: the measurement takes half a minute on a quiet 2-core machine
# and up to two beside a busy core, and the fastest runtime it finds saves about a quarter of the
# embedding time (torch bf16 against ONNX fp32, 66 against 50 texts/s on an AMD EPYC with
# avx512_bf16). 2 MB is about 13,000 texts of a compressed SWORD module, four minutes of
# embedding, where the two are about even; a few documents or a demo's chapters stay far below.
MEASURE_FROM_BYTES = 2_000_000

log = logging.getLogger(__name__)


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
             record["machine"]["cpu"], record["machine"]["cores"], runtime_record.rounds_told(record),
             runtime_record.summary(record), key(query_runtime_of(record) or chosen))
    return chosen


def settled(name: str, release: str, home: Path | None = None) -> bool:
    """Whether nothing is left to settle: the runtime is set, or this machine's is measured."""
    pool = candidates(requested(), numerics.requested())
    if len(pool) == 1:
        return True
    found = recorded(name, release, home)
    return holds(found, pool) and not found.get("provisional")


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
    return holds(found, pool) and (not found.get("provisional") or found["provisional"]["input_bytes"] == inputs)


def _provisional(name: str, release: str, pool: list[tuple[str, str]], inputs: int, home: Path | None) -> dict:
    """The choice of a home whose inputs do not pay for a measurement: the one it recorded on another
    machine where still open (a home keeps its index's model), else the first candidate in ORDER,
    which reproduces fp32 and, on ONNX, spares the torch import."""
    name, release = measured_as(name, release)
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
            found = runtime_record.read(path)
            if _current(found, pool, inputs):
                return found  # another process settled it meanwhile
            record = provisional(found)
            runtime_record.write(path, record)
    except OSError as exc:  # a home that cannot be written: chosen, not recorded
        log.warning("cannot record the provisional embedding runtime in %s: %s", folder, exc)
        record = provisional(runtime_record.read(path))
    return record | {"file": str(path)}


def pick(record: dict, pool: list[tuple[str, str]]) -> tuple[str, str]:
    """The recorded choice where it is open; else the best measured candidate of the pool."""
    chosen = (record["backend"], record.get("precision", numerics.DEFAULT))
    if chosen in pool:
        return chosen
    measured_here = {k: v for k, v in (record.get("candidates") or {}).items() if tuple(k.split("/")) in pool}
    if not measured_here:
        return pool[0]
    return decide(measured_here)["ingest"]


def measured(name: str, release: str, pool: list[tuple[str, str]] | None = None, home: Path | None = None,
             again: bool = False, sample: int = measurement.TEXTS, provisional_ok: bool = True) -> dict:
    """The recorded measurement of this home for this machine, measured (and recorded) first if
    there is none that covers `pool` (all of ORDER when None), if `again`, or if it is provisional
    and not `provisional_ok`. An adapted model runs as its base does: the base is what is measured
    and recorded."""
    name, release = measured_as(name, release)
    pool = pool or candidates(None, None)
    folder = onnx_runtime.model_dir(name, release, home)
    path = folder / CHOICE_FILE
    here = machine()

    def usable(found):
        return not again and holds(found, pool, here) and (provisional_ok or not found.get("provisional"))

    record = runtime_record.read(path)
    if usable(record):
        return record | {"file": str(path)}
    try:
        with onnx_runtime._locked(folder, ".choice.lock"):
            record = runtime_record.read(path)
            if not usable(record):
                record = measurement.measure(name, release, pool, home, sample) | {"machine": here}
                runtime_record.write(path, record)
    except OSError as exc:  # a home that cannot be written: measured, not recorded
        log.warning("cannot record the embedding runtime's measurement in %s: %s", folder, exc)
        record = measurement.measure(name, release, pool, home, sample) | {"machine": here}
    return record | {"file": str(path)}


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
