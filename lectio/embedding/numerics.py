"""Which numerics the model runs in: fp32, bf16 autocast or int8 dynamic quantization.

What the CPU offers is read from its flags; which of it is used is measured, not assumed
(lectio.embedding.runtime_choice): the same bf16 autocast ran 2.3x fp32 on a Xeon with AMX and
about 3x slower than fp32 on a Xeon whose AVX-512 lacks native bf16.
LECTIO_EMBED_PRECISION=fp32|bf16|int8 fixes it instead (int8 dynamic quantization moved vectors to
a mean cosine of 0.93 from fp32's: too far for a retrieval index, so it is used only when asked).
The precision is part of the embedding cache key, so vectors of different numerics never meet in
one index version.
"""

from __future__ import annotations

import contextlib
import logging
from functools import lru_cache
from pathlib import Path

from lectio.settings import runtime_settings

PRECISIONS = ("fp32", "bf16", "int8")
DEFAULT = "fp32"

log = logging.getLogger(__name__)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name, as measurements are reported beside it."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def offered(flags: set[str]) -> list[str]:
    """The precisions the CPU has instructions for, fp32 always."""
    found = ["fp32"]
    if flags & {"avx512_bf16", "amx_bf16"}:
        found.append("bf16")
    if flags & {"avx512_vnni", "avx_vnni", "amx_int8"}:
        found.append("int8")
    return found


@lru_cache(maxsize=1)
def requested() -> str | None:
    """LECTIO_EMBED_PRECISION when set (checked), else None: the machine's measurement decides."""
    chosen = runtime_settings().embed_precision
    if chosen is not None and chosen not in PRECISIONS:
        raise ValueError(f"LECTIO_EMBED_PRECISION must be one of {', '.join(PRECISIONS)}, not {chosen!r}")
    log.info("embedding precision %s (this CPU offers %s)", chosen or "measured", ", ".join(offered(cpu_flags())))
    return chosen


def prepare(model, chosen: str):
    """The model as it should run in `chosen` numerics."""
    if chosen == "int8":
        import torch

        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return model


def autocast(chosen: str):
    if chosen == "bf16":
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
