"""Training the reranker (lectio.reranker.model) on the training pairs.

Each step shows the model a few queries, each with its positive and its hard negatives, and asks
it to put the positive first among them (a softmax over the group, cross-entropy on the positive).
The validation split (books never trained on) is scored every `eval_every` steps by the same
question, as MRR of the positive in its group; the best state is kept, so a run that starts to
overfit ends with the model it had at its best. Seeded: the same pairs, recipe and seed on the
same runtime give the same model, and its id says so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from lectio.embedding import numerics
from lectio.embedding.packaged import MODEL_NAME, model_path, release_of
from lectio.reranker.model import RECORD, models_dir, quiet_transformers, save, scorer
from lectio.training.loop import Learned, Schedule, fit, train_once
from lectio.training.pairs import Pair, fingerprint


@dataclass(frozen=True)
class Recipe:
    layers: int = 3  # of MiniLM's six: each costs query time (benchmarks/rerank.py)
    max_tokens: int = 128  # query and text together, as the rerank stage feeds them
    groups_per_step: int = 8  # queries per step, each with its positive and negatives
    learning_rate: float = 4e-5
    warmup: float = 0.1  # share of the steps the learning rate climbs over
    steps: int = 600
    eval_every: int = 100
    validation_groups: int = 400
    seed: int = 20261206


def model_id(pairs_fingerprint: str, recipe: Recipe, precision: str) -> str:
    made_of = json.dumps({"pairs": pairs_fingerprint, "base": f"{MODEL_NAME}@{release_of(MODEL_NAME)}",
                          "recipe": asdict(recipe), "precision": precision}, sort_keys=True)
    return f"rerank-minilm-l{recipe.layers}-{hashlib.sha256(made_of.encode()).hexdigest()[:12]}"


def train(pairs: list[Pair], home: Path, recipe: Recipe = Recipe(), precision: str = "fp32",
          progress: Callable[[int, int, float], None] | None = None) -> dict:
    """Train on `pairs`' train split, keep the state that scored best on its validation split, and
    store it in `home`; the record (reranker.json) is returned. An existing model of the same id is
    reused: it is what this training would make."""
    pairs_fp = fingerprint(pairs)
    ident = model_id(pairs_fp, recipe, precision)
    about = {"id": ident, "base": f"{MODEL_NAME}@{release_of(MODEL_NAME)}", "pairs": pairs_fp,
             "recipe": asdict(recipe), "precision": precision, "seed": recipe.seed}
    return train_once(models_dir(home) / ident, RECORD, pairs, about, recipe.validation_groups,
                      lambda train_split, validation: _fit(train_split, validation, recipe, precision, progress))


def _fit(train_split, validation, recipe: Recipe, precision: str, progress) -> Learned:
    model, tokenizer = untrained(recipe)
    schedule = Schedule(recipe.steps, recipe.groups_per_step, recipe.learning_rate, recipe.warmup,
                        recipe.eval_every, recipe.seed)
    curve, checks = fit(model, train_split, schedule, precision,
                        lambda groups, _: _group_loss(model, tokenizer, groups, recipe.max_tokens),
                        (lambda: validate(model, tokenizer, validation, recipe.max_tokens, precision))
                        if validation else None, progress)
    return (lambda work: save(model, tokenizer, work)), curve, checks


def _base(layers: int):
    """The packaged MiniLM's first `layers` layers with a new one-output head."""
    from transformers import AutoConfig, AutoTokenizer, BertModel

    quiet_transformers()
    path = str(model_path(MODEL_NAME))
    config = AutoConfig.from_pretrained(path, num_hidden_layers=layers)
    encoder = BertModel.from_pretrained(path, config=config, add_pooling_layer=False)
    return scorer(encoder), AutoTokenizer.from_pretrained(path)


def _group_loss(model, tokenizer, groups: list[Pair], max_tokens: int):
    import torch

    logits = _group_logits(model, tokenizer, groups, max_tokens)
    return torch.nn.functional.cross_entropy(logits.float(), torch.zeros(len(groups), dtype=torch.long))


def _group_logits(model, tokenizer, groups: list[Pair], max_tokens: int):
    size = 1 + len(groups[0].negatives)
    firsts = [p.query for p in groups for _ in range(size)]
    seconds = [text for p in groups for text in (p.positive, *p.negatives)]
    batch = tokenizer(firsts, seconds, truncation="longest_first", max_length=max_tokens, padding=True,
                      return_tensors="pt")
    return model(**batch).reshape(len(groups), size)


def validate(model, tokenizer, groups: list[Pair], max_tokens: int, precision: str, batch: int = 16) -> dict:
    """MRR and accuracy@1 of the positive among its group's texts, and the mean loss."""
    import torch

    model.eval()
    ranks, losses = [], []
    with torch.inference_mode(), numerics.autocast(precision):
        for start in range(0, len(groups), batch):
            chunk = groups[start:start + batch]
            logits = _group_logits(model, tokenizer, chunk, max_tokens).float()
            losses.append(float(torch.nn.functional.cross_entropy(
                logits, torch.zeros(len(chunk), dtype=torch.long))) * len(chunk))
            ranks += (1 + (logits[:, 1:] > logits[:, :1]).sum(dim=1)).tolist()
    n = max(1, len(ranks))
    return {"mrr": round(sum(1 / r for r in ranks) / n, 4), "accuracy": round(sum(r == 1 for r in ranks) / n, 4),
            "loss": round(sum(losses) / n, 4), "groups": len(ranks)}


def untrained(recipe: Recipe):
    """(model, tokenizer) as training starts from them: the base layers and the seeded new head.
    Its score is the floor a training must clear."""
    import torch

    torch.manual_seed(recipe.seed)
    return _base(recipe.layers)
