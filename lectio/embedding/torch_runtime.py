"""The torch backend: the packaged model through sentence-transformers, in PyTorch eager.

torch, transformers and sentence-transformers are imported at the first load, never before.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

from lectio.embedding import numerics
from lectio.embedding.packaged import model_path

_LOADING = threading.Lock()


def loaded(name: str, precision: str):
    # The service's query threads may all ask for a model not loaded yet: it is loaded once.
    with _LOADING:
        return _load(name, precision)


@lru_cache(maxsize=4)
def _load(name: str, precision: str):
    # Quietens the weight-loading progress bar and any attempt to reach a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return numerics.prepare(SentenceTransformer(str(model_path(name)), device="cpu"), precision)


def vectors(name: str, texts: list[str], batch_size: int = 64, precision: str = "fp32") -> np.ndarray:
    """Unit-length float32 vectors as sentence-transformers makes them (each text cut at the
    window): what the ONNX export is checked against, and the torch backend's encode."""
    import torch

    with torch.inference_mode(), numerics.autocast(precision):
        found = loaded(name, precision).encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                               convert_to_numpy=True, show_progress_bar=False)
    return found.astype(np.float32, copy=False)
