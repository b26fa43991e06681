"""A trained reranker: a cross-encoder that reads the query and one hit's text together and scores
how well the text answers it, where the embedding model compares two vectors made apart.

It starts from the packaged all-MiniLM-L6-v2 weights, keeps the first `layers` of its six (each
layer costs query time; see benchmarks/rerank.py), and adds one linear head on the mean of
the tokens' last states (lectio.training.reranker.trainer trains it). The mean, not the first token: MiniLM
was trained to pool by the mean, and its first token's state barely differs between texts, so a
head on it starts blind and learns slowly. A trained model lives in the home under
models/rerankers/<id>/, with the record of what made it (reranker.json); its id names its base,
its layers and its fingerprint, so two homes trained alike hold the same id.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from lectio.registry.models import Registry

RECORD = "reranker.json"
log = logging.getLogger(__name__)


REGISTRY = Registry("rerankers", RECORD, "reranker", "lectio model train")
# The registry's, under the names the reranker's callers know.
models_dir, trained, find = REGISTRY.models_dir, REGISTRY.trained, REGISTRY.find


def quiet_transformers() -> None:
    """transformers reports every dropped layer and new head as it loads: expected here."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


HEAD = "head.pt"


def scorer(encoder):
    """The scoring module over a BertModel: its tokens' mean last state through one linear head."""
    import torch

    class Scorer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder
            self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            states = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
            return self.head(pooled).squeeze(-1)

    return Scorer()


def save(model, tokenizer, folder: Path) -> None:
    import torch

    model.encoder.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    torch.save(model.head.state_dict(), folder / HEAD)


@dataclass
class CrossEncoder:
    """A loaded reranker: scores (query, text) pairs, higher is better."""

    model: object
    tokenizer: object
    precision: str
    id: str

    @classmethod
    def load(cls, folder: Path, precision: str = "fp32") -> CrossEncoder:
        import torch
        from transformers import AutoTokenizer, BertModel

        quiet_transformers()
        record = json.loads((folder / RECORD).read_text())
        model = scorer(BertModel.from_pretrained(str(folder), add_pooling_layer=False))
        model.head.load_state_dict(torch.load(folder / HEAD, weights_only=True))
        return cls(model.eval(), AutoTokenizer.from_pretrained(str(folder)), precision, record["id"])

    def score(self, query: str, texts: list[str], max_tokens: int) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        import torch

        from lectio.embedding import numerics

        batch = self.tokenizer([query] * len(texts), texts, truncation="longest_first", max_length=max_tokens,
                               padding=True, return_tensors="pt")
        with torch.inference_mode(), numerics.autocast(self.precision):
            scores = self.model(**batch)
        return scores.float().numpy()


_LOADING = threading.Lock()


def loaded(home: Path, model_id: str) -> CrossEncoder:
    """A home's trained reranker by id, in the numerics the home measured fastest for the
    embedding model of the same architecture: loaded once per process, searches share it."""
    with _LOADING:
        return _loaded(str(home), model_id)


@lru_cache(maxsize=4)
def _loaded(home: str, model_id: str) -> CrossEncoder:
    return CrossEncoder.load(find(Path(home), model_id), precision(Path(home)))


def precision(home: Path) -> str:
    """bf16 where this home measured torch faster in it than in fp32 for the embedding model, the
    same architecture; fp32 otherwise (and before any measurement)."""
    from lectio.embedding import runtime_record
    from lectio.embedding.packaged import MODEL_NAME, release_of

    record = runtime_record.recorded(MODEL_NAME, release_of(MODEL_NAME), home) or {}
    speed = {name: found.get("texts_per_second") or 0 for name, found in (record.get("candidates") or {}).items()}
    return "bf16" if speed.get("torch/bf16", 0) > speed.get("torch/fp32", 0) > 0 else "fp32"
