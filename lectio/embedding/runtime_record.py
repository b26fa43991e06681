"""The home's runtime record (backend.json, in the base model's folder of the home's model cache):
which runtime this machine chose and its evidence, where it is kept, what machine it answers for,
the shape every reader relies on, and how it reads in a line.

The outcome of a measurement (lectio.embedding.measurement) is recorded here and read by every
later start: the runtime and numerics are part of the model id, so a choice that flipped with a
shared machine's noise would re-embed every source. It is measured again only on another machine
(CPU model, cores, onnxruntime or torch release), when the file is deleted, or by
`lectio model measure`, which reports the new choice; a home keeps its index's model until
`lectio migrate` builds the new one beside it.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from lectio.embedding import numerics, onnx_runtime
from lectio.embedding.backends import BACKENDS, PRECISIONS, key
from lectio.embedding.packaged import base_of, release_of

CHOICE_FILE = "backend.json"


def machine() -> dict:
    """What a measurement holds for: another CPU, core count or runtime release is measured again."""
    return {"cpu": numerics.cpu_model(), "cores": onnx_runtime.cores(),
            "onnxruntime": onnx_runtime.runtime_version(), "torch": onnx_runtime._version("torch")}


def stamp(name: str, release: str, home: Path | None = None) -> tuple | None:
    """The home's record file as it stands (modified time and size), None where there is none."""
    name, release = measured_as(name, release)
    try:
        found = (onnx_runtime.model_dir(name, release, home) / CHOICE_FILE).stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def measured_as(name: str, release: str) -> tuple[str, str]:
    """The model whose measurement answers for `name`: its base, where it is an adapted model
    (the same layers and shapes, so the same speed and the same numerics' behaviour)."""
    base = base_of(name)
    return (name, release) if base == name else (base, release_of(base))


def holds(record: dict | None, pool: list[tuple[str, str]], here: dict | None = None) -> bool:
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
    return read(record_file(name, release, home))


def record_file(name: str, release: str, home: Path | None = None) -> Path:
    """Where the home keeps the runtime record that answers for `name`."""
    name, release = measured_as(name, release)
    return onnx_runtime.model_dir(name, release, home) / CHOICE_FILE


def write(path: Path, record: dict) -> None:
    work = path.with_name(f".{CHOICE_FILE}.{os.getpid()}")
    work.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(work, path)


def read(path: Path) -> dict | None:
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
    read (runtime_choice.query_session falls back to one thread)."""
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


def rounds_told(record: dict) -> str:
    """How many paired rounds the record's choice rests on, and whether the machine was quiet."""
    if record.get("provisional"):
        return (f"provisional, not measured: the sources' inputs ({record['provisional']['input_bytes']:,} bytes) "
                f"are below the {record['provisional']['measure_from_bytes']:,} a measurement pays for")
    times = [len(v["seconds"]) for v in (record.get("candidates") or {}).values() if "seconds" in v]
    quiet = "quiet" if record.get("quiet", True) else "not quiet"
    return f"{max(times)} paired rounds, {quiet}" if times else quiet


def summary(record: dict) -> str:
    """The speeds the record's candidates measured, as the runtime line names them."""
    found = record.get("candidates") or {}
    return ", ".join(f"{k} {v['texts_per_second']:.0f} texts/s" for k, v in found.items() if v.get("texts_per_second")) \
        or ("nothing measured" if record.get("provisional") else "an earlier measurement")
