"""Adapting the embedding model to the corpus: the packaged MiniLM fine-tuned on the training pairs.

Each step embeds a batch of queries, their positives and one hard negative each, and asks every
query to find its own positive among all the batch's passages (a softmax over the similarities,
cross-entropy on the positive): the other queries' passages are the in-batch negatives, the mined
one the hard negative. Many queries are about the same verses (three commentators on one psalm), so
another query's passage is no negative where it is the query's own positive or its verses share a
chapter with the query's: those are masked out of the softmax, never taught as wrong.

The validation split (books never trained on) is scored every `eval_every` steps as retrieval: each
validation query ranks every passage of the split's pairs, and the MRR of its positive decides; the
best state is kept. The untrained model is scored first, so the record says what training gained.
Seeded: the same pairs, recipe and seed on the same runtime give the same model, and its id says so.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from lectio.embedding import numerics
from lectio.embedding.packaged import MAX_SEQ_TOKENS, MODEL_NAME, model_path, release_of
from lectio.training.embedder.registry import RECORD, REGISTRY
from lectio.training.loop import Learned, Schedule, fit, train_once
from lectio.training.pairs import Pair, fingerprint


@dataclass(frozen=True)
class Recipe:
    batch: int = 32  # queries per step; each brings its positive and one hard negative
    learning_rate: float = 2e-5
    warmup: float = 0.1  # share of the steps the learning rate climbs over
    steps: int = 400
    scale: float = 20.0  # similarities are cosines; the softmax needs them spread
    query_tokens: int = 128
    passage_tokens: int = MAX_SEQ_TOKENS  # the window every chunk is embedded in
    eval_every: int = 100
    validation_queries: int = 600
    seed: int = 20261206


def model_id(pairs_fingerprint: str, recipe: Recipe, precision: str) -> str:
    base = f"{MODEL_NAME}@{release_of(MODEL_NAME)}"
    made_of = json.dumps({"pairs": pairs_fingerprint, "base": base, "recipe": asdict(recipe),
                          "precision": precision}, sort_keys=True)
    return f"{MODEL_NAME}-adapted-{hashlib.sha256(made_of.encode()).hexdigest()[:12]}"


def train(pairs: list[Pair], home: Path, recipe: Recipe = Recipe(), precision: str = "fp32",
          progress: Callable[[int, int, float], None] | None = None) -> dict:
    """Fine-tune on `pairs`' train split, keep the state that ranked best on its validation split,
    store it in `home` (a sentence-transformers folder and the record, embedder.json) and return
    the record. A model of the same id already there is reused: it is what this would make."""
    ident = model_id(fingerprint(pairs), recipe, precision)
    about = {"id": ident, "base": f"{MODEL_NAME}@{release_of(MODEL_NAME)}", "pairs": fingerprint(pairs),
             "recipe": asdict(recipe), "precision": precision, "seed": recipe.seed}
    return train_once(REGISTRY.models_dir(home) / ident, RECORD, pairs, about, recipe.validation_queries,
                      lambda train_split, validation: _fit(train_split, validation, recipe, precision, progress),
                      untrained=True)


def base_model():
    """The packaged MiniLM as sentence-transformers loads it: where training starts."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    from lectio.reranker.model import quiet_transformers

    quiet_transformers()
    return SentenceTransformer(str(model_path(MODEL_NAME)), device="cpu")


def _fit(train_split: list[Pair], validation: list[Pair], recipe: Recipe, precision: str, progress) -> Learned:
    import torch

    torch.manual_seed(recipe.seed)
    model = base_model()
    schedule = Schedule(recipe.steps, recipe.batch, recipe.learning_rate, recipe.warmup, recipe.eval_every,
                        recipe.seed, score_untrained=True)
    curve, checks = fit(model, train_split, schedule, precision,
                        lambda batch, rng: batch_loss(model, batch, recipe, rng),
                        (lambda: validate(model, validation, recipe, precision)) if validation else None,
                        progress)
    return (lambda work: model.save(str(work))), curve, checks


def embed(model, texts: list[str], max_tokens: int, group: int = 16):
    """Unit vectors of texts through the model's own modules (pooling and normalisation), with
    gradients where the caller keeps them. Texts go through in groups of similar length: padded
    to the longest of all, a batch with one pericope would cost four times its verses' work."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    parts = []
    for start in range(0, len(order), group):
        chosen = [texts[i] for i in order[start:start + group]]
        features = model.tokenizer(chosen, truncation=True, max_length=max_tokens, padding=True,
                                   return_tensors="pt")
        parts.append(model(dict(features))["sentence_embedding"].float())
    vectors = torch.cat(parts)[torch.as_tensor(np.argsort(order))]
    return torch.nn.functional.normalize(vectors, dim=-1)


def batch_loss(model, batch: list[Pair], recipe: Recipe, rng: random.Random):
    """Each query against every positive and hard negative of the batch, its own positive the
    target, the passages that may be right for it masked out."""
    import torch

    negatives = [rng.choice(p.negatives) for p in batch]
    queries = embed(model, [p.query for p in batch], recipe.query_tokens)
    passages = embed(model, [p.positive for p in batch] + negatives, recipe.passage_tokens)
    scores = recipe.scale * queries @ passages.T
    scores = scores.masked_fill(torch.as_tensor(false_negatives(batch, negatives)), float("-inf"))
    return torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))


def false_negatives(batch: list[Pair], negatives: list[str]) -> np.ndarray:
    """[query, passage] True where the passage (the batch's positives, then its negatives) must not
    count against the query: another query's positive that is this query's positive too or lies in
    a chapter this query is about, or any passage whose text is this query's positive."""
    chapters = [{ref.rsplit("_", 1)[0] for ref in p.refs} for p in batch]
    texts = [p.positive for p in batch] + negatives
    n = len(batch)
    mask = np.zeros((n, len(texts)), dtype=bool)
    for i, pair in enumerate(batch):
        for j, text in enumerate(texts):
            if j == i:
                continue
            mask[i, j] = text == pair.positive or (j < n and not chapters[i].isdisjoint(chapters[j]))
    return mask


def validate(model, pairs: list[Pair], recipe: Recipe, precision: str, batch: int = 64) -> dict:
    """Each validation query ranks every distinct passage of the validation pairs: MRR and
    recall@10 of its positive."""
    import torch

    pool = list(dict.fromkeys(text for p in pairs for text in (p.positive, *p.negatives)))
    where = {text: i for i, text in enumerate(pool)}
    model.eval()
    with torch.inference_mode(), numerics.autocast(precision):
        queries = torch.cat([embed(model, [p.query for p in pairs[s:s + batch]], recipe.query_tokens)
                             for s in range(0, len(pairs), batch)])
        passages = torch.cat([embed(model, pool[s:s + batch], recipe.passage_tokens)
                              for s in range(0, len(pool), batch)])
    scores = (queries @ passages.T).numpy()
    own = scores[np.arange(len(pairs)), [where[p.positive] for p in pairs]]
    ranks = 1 + (scores > own[:, None]).sum(axis=1)
    return {"mrr": round(float(np.mean(1 / ranks)), 4), "recall@10": round(float(np.mean(ranks <= 10)), 4),
            "queries": len(pairs), "passages": len(pool)}
