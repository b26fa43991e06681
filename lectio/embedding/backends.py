"""Which runtimes and numerics can run the model, and which of them are left to a machine to choose
among: torch (PyTorch eager, through sentence-transformers) in fp32 or bf16 autocast, or onnx (ONNX
Runtime over an export of the same weights, lectio.embedding.onnx_runtime) in fp32.

A caller may name the backend (the Dagster EmbedderResource's `backend`); otherwise
LECTIO_EMBED_BACKEND=torch|onnx and LECTIO_EMBED_PRECISION=fp32|bf16|int8 choose. What they leave
open are the candidates: the runtimes this CPU runs natively (bf16 only with avx512_bf16 or
amx_bf16; int8 only when asked, its vectors are too far from fp32's), in ORDER; the machine
chooses among them by measurement (lectio.embedding.runtime_choice).

The backend is part of the model id (`…+onnx`; torch adds nothing, so the ids made before this
backend existed keep naming torch's vectors), hence of the embedding cache key, of every source's
fingerprint and of the model an index version records.
"""

from __future__ import annotations

from lectio.embedding import numerics, onnx_runtime
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
