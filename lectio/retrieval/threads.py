"""The threads a search runs work on beside its own: made on the first search that needs them,
not when the package is imported (a process that never searches starts none)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache

from lectio.embedding.model import one_model_thread

# One per concurrent search a service is likely to serve.
_WORKERS = 8


def _one_model_thread() -> None:
    # One short query gains little from a second core, and a second model thread spins against
    # the database answering the same search (measured beside a busy core: 9 ms on one thread,
    # 36-500 ms on two). Set per thread and lazily, so ingestion keeps all cores and a search
    # served by ONNX Runtime never imports torch.
    one_model_thread()


@cache
def embedding() -> ThreadPoolExecutor:
    """Query embeddings run here, beside the database's work on the same search."""
    return ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="lectio-query-embedding",
                              initializer=_one_model_thread)


@cache
def evidence() -> ThreadPoolExecutor:
    """A search narrowed to scripture reads the unfiltered ranking its evidence needs here, on the
    search's second connection, beside the filtered one."""
    return ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="lectio-evidence")
