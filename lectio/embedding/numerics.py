"""Which numerics the model runs in: fp32, bf16 autocast or int8 dynamic quantization.

What the CPU offers is detected (its flags) and logged, but a precision is used only where it
was measured to keep retrieval: on the machines this was built on (Xeon, AVX-512 VNNI, flags that
include avx512_bf16), bf16 autocast ran slower than fp32 (cosine 0.99998 to fp32), and int8
dynamic quantization of the linear layers, though faster, moved vectors to a mean cosine of 0.93
from fp32's: too far for a retrieval index. So fp32 is the default everywhere, and
LECTIO_EMBED_PRECISION=bf16|int8 chooses another for a machine where it measures better
(benchmarks/embedding_throughput.py). The precision is part of the embedding cache key, so
vectors of different numerics never meet in one index version.
"""

from __future__ import annotations

import contextlib
import logging
import os
from functools import lru_cache
from pathlib import Path

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
def precision() -> str:
    """LECTIO_EMBED_PRECISION when set (checked), else fp32; logged once with what the CPU offers."""
    chosen = os.environ.get("LECTIO_EMBED_PRECISION", "").strip().lower() or DEFAULT
    if chosen not in PRECISIONS:
        raise ValueError(f"LECTIO_EMBED_PRECISION must be one of {', '.join(PRECISIONS)}, not {chosen!r}")
    log.info("embedding in %s (this CPU offers %s)", chosen, ", ".join(offered(cpu_flags())))
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
