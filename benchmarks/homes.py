"""A fresh lectio home for a benchmark: the environment a `lectio` command needs to run in it,
with this checkout's code, and nothing of the caller's home or database leaking in."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def home_env(home: Path, corpus: Path | None = None, runtime_set: bool = True) -> dict[str, str]:
    """`home`'s own embedded server and Dagster instance; SWORD modules in `corpus` (default: inside
    the home). With `runtime_set`, ONNX fp32, so no runtime is measured; without, the home measures
    as a new user's does."""
    env = {**os.environ, "LECTIO_HOME": str(home), "LECTIO_CORPUS_DIR": str(corpus or home / "corpus"),
           # This checkout's code, whichever lectio the `lectio` script was installed from.
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))}
    for name in ("LECTIO_SOURCES", "DATABASE_URL", "DAGSTER_DATABASE_URL", "DAGSTER_HOME",
                 "LECTIO_EMBED_BACKEND", "LECTIO_EMBED_PRECISION"):
        env.pop(name, None)
    if runtime_set:
        env |= {"LECTIO_EMBED_BACKEND": "onnx", "LECTIO_EMBED_PRECISION": "fp32"}
    return env
