"""Which runtime runs the model: torch (PyTorch eager, through sentence-transformers) or onnx
(ONNX Runtime over an export of the same weights, lectio.embedding.onnx_runtime).

A caller may name the backend (the Dagster EmbedderResource's `backend`); otherwise
LECTIO_EMBED_BACKEND=torch|onnx chooses. Unset, the machine chooses, by measurement: the first
time a home needs the model id, both backends embed the same 32 probe texts (a query's length to a
chunk's) on every core, in turn, three times; ONNX is chosen when its vectors are those of torch
(min cosine >= 0.99999, max |Δ| <= 1e-4) and it is not slower than torch by more than a tenth
(within a busy machine's noise it wins the tie, since it also spares a process the torch import).
The outcome is recorded beside the export, in the home's model cache (backend.json, with what was
measured), and every later start reads it rather than measuring again: the backend is part of
the model id, so a choice that flipped with a shared machine's noise would re-embed every source.
It is measured again only when the machine is another (CPU model, cores, onnxruntime or torch
release), or when the file is deleted. torch stays the backend where onnxruntime is not
installed, for bf16 (torch autocast), and wherever ONNX Runtime measures slower.

The backend is part of the model id (`…+onnx`; torch adds nothing, so the ids made before this
backend existed keep naming torch's vectors), hence of the embedding cache key, of every source's
fingerprint and of the model an index version records: a change of backend re-embeds into a new
version that `lectio migrate` builds and the gate judges, never a silent mix of the two.
"""

from __future__ import annotations

import json
import logging
import os
import time
from functools import lru_cache
from pathlib import Path

from lectio.embedding import numerics, onnx_runtime, torch_runtime

BACKENDS = ("torch", "onnx")
DEFAULT = "torch"  # what a model id without a backend part names
# The precisions each backend runs: bf16 is torch's autocast; ONNX Runtime's int8 is its own
# dynamic quantizer (lectio.embedding.onnx_runtime).
PRECISIONS = {"torch": ("fp32", "bf16", "int8"), "onnx": ("fp32", "int8")}
CHOICE_FILE = "backend.json"
TIE = 1.1  # onnx is kept unless torch measured this much faster
ROUNDS = 3

log = logging.getLogger(__name__)


def requested() -> str | None:
    """LECTIO_EMBED_BACKEND (checked), None when unset."""
    return checked(os.environ.get("LECTIO_EMBED_BACKEND"), "LECTIO_EMBED_BACKEND")


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


@lru_cache(maxsize=4)
def backend(name: str, release: str, precision: str, given: str | None = None) -> str:
    """The backend new embeddings are made with: `given`, else LECTIO_EMBED_BACKEND, else this
    machine's measurement; logged once per process."""
    chosen, why = checked(given), "the caller's"
    if chosen is None:
        chosen, why = requested(), "LECTIO_EMBED_BACKEND"
    if chosen is not None:
        check(chosen, precision)
        if chosen == "onnx":
            onnx_runtime.require()
        log.info("embedding backend %s (%s)", chosen, why)
        return chosen
    if precision not in PRECISIONS["onnx"]:
        log.info("embedding backend torch: %s runs on torch only", precision)
        return "torch"
    if not onnx_runtime.available():
        log.info("embedding backend torch: onnxruntime is not installed")
        return "torch"
    record = measured(name, release)
    speed = record.get("speedup")
    log.info("embedding backend %s, measured on this machine (%s, %s cores): onnx %s× torch fp32 on the probe batch, "
             "min cosine to torch %s%s; LECTIO_EMBED_BACKEND=torch|onnx overrides, deleting %s measures again",
             record["backend"], record["machine"]["cpu"], record["machine"]["cores"],
             "?" if speed is None else f"{speed:.2f}", record.get("equivalence", {}).get("min_cosine", "?"),
             f" ({record['reason']})" if record.get("reason") else "", record.get("file", CHOICE_FILE))
    return record["backend"]


def machine() -> dict:
    """What a measurement holds for: another CPU, core count or runtime release is measured again."""
    return {"cpu": numerics.cpu_model(), "cores": onnx_runtime.cores(),
            "onnxruntime": onnx_runtime.runtime_version(), "torch": onnx_runtime._version("torch")}


def measured(name: str, release: str, home: Path | None = None) -> dict:
    """The recorded choice of this home for this machine, measured (and recorded) first if none."""
    folder = onnx_runtime.model_dir(name, release, home)
    path = folder / CHOICE_FILE
    here = machine()
    record = _read(path)
    if record is not None and record.get("machine") == here:
        return record | {"file": str(path)}
    try:
        with onnx_runtime._locked(folder, ".choice.lock"):
            record = _read(path)
            if record is None or record.get("machine") != here:
                record = measure(name, release, home) | {"machine": here}
                work = path.with_name(f".{CHOICE_FILE}.{os.getpid()}")
                work.write_text(json.dumps(record, indent=2) + "\n")
                os.replace(work, path)
    except OSError as exc:  # a home that cannot be written: measured, not recorded
        log.warning("cannot record the embedding backend's measurement in %s: %s", folder, exc)
        record = measure(name, release, home) | {"machine": here}
    return record | {"file": str(path)}


def _read(path: Path) -> dict | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("backend") in BACKENDS else None


def measure(name: str, release: str, home: Path | None = None) -> dict:
    """Both backends on the probe texts: their vectors compared, their seconds taken in turn."""
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    try:
        onnx = onnx_runtime.OnnxModel(onnx_runtime.ensure_export(name, release, "fp32", home), name=name)
    except Exception as exc:  # noqa: BLE001 - whatever stops the export leaves torch the backend
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        log.warning("embedding backend torch: the ONNX export failed: %s", reason)
        return {"backend": "torch", "reason": f"the ONNX export failed: {reason}", "measured_at": started}
    probes = onnx_runtime.probe_texts()
    run = {"torch": lambda: torch_runtime.vectors(name, probes), "onnx": lambda: onnx.encode(probes, kind="batch")}
    vectors = {b: f() for b, f in run.items()}  # also the warm-up of each
    seconds: dict[str, list[float]] = {b: [] for b in run}
    for round_ in range(ROUNDS):
        for b in (BACKENDS if round_ % 2 == 0 else BACKENDS[::-1]):
            t0 = time.perf_counter()
            run[b]()
            seconds[b].append(round(time.perf_counter() - t0, 4))
    same = onnx_runtime.equivalence(vectors["onnx"], vectors["torch"])
    speedup = min(seconds["torch"]) / min(seconds["onnx"])
    return decide(same, speedup) | {"speedup": round(speedup, 3), "seconds": seconds, "equivalence": same,
                                    "texts": len(probes), "measured_at": started}


def decide(equivalence: dict, speedup: float) -> dict:
    """onnx where its vectors are torch's and it is not slower by more than the tie's tenth."""
    if not equivalence["equivalent"]:
        return {"backend": "torch", "reason": "the ONNX vectors are not torch's"}
    if speedup * TIE < 1:
        return {"backend": "torch", "reason": "ONNX Runtime measured slower"}
    return {"backend": "onnx"}
