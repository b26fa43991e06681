"""The training loop both learners share (the reranker and the adapted embedder): seeded batches
drawn through the train split epoch by epoch, AdamW with a linear warm-up and decay, gradients
clipped, the loss curve averaged over every ten steps, and the validation scored every
`eval_every` steps, the best-scoring state kept and restored at the end, so a run that starts to
overfit ends with the model it had at its best. Also what both make of a run: the skeleton around
the loop (reuse, splits, record), the model stored whole, and the plot of its loss curve."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from dataclasses import dataclass, replace
from pathlib import Path

from lectio.embedding import numerics

# What a learner's `learn(train split, validation)` gives back: what writes the model into a folder,
# the loss curve and the validation checks.
Learned = tuple[Callable[[Path], None], list[dict], list[dict]]


@dataclass(frozen=True)
class Schedule:
    steps: int
    batch: int  # items of the train split per step
    learning_rate: float
    warmup: float  # share of the steps the learning rate climbs over
    eval_every: int
    seed: int
    score_untrained: bool = False  # score the model before its first step too, as the first check


def with_steps(recipe, steps: int):
    """A learner's recipe (a dataclass with `steps` and `eval_every`) cut to `steps`, validated at
    least once."""
    return replace(recipe, steps=steps, eval_every=min(recipe.eval_every, steps))


def fit(model, items: Sequence, schedule: Schedule, precision: str,
        loss: Callable[[list, random.Random], object], validate: Callable[[], dict] | None,
        progress: Callable[[int, int, float], None] | None = None) -> tuple[list[dict], list[dict]]:
    """Train `model` in place on `items` by `loss(batch, rng)`; (loss curve, validation checks).
    `validate` returns a dict with "mrr", the score that decides the state kept."""
    import torch

    rng = random.Random(schedule.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=schedule.learning_rate)
    warm = max(1, int(schedule.steps * schedule.warmup))
    decay = max(1, schedule.steps - warm)
    lr = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (schedule.steps - s) / decay)))
    checks, best = [], None

    def check(step: int) -> None:
        nonlocal best
        checks.append({"step": step} | validate())
        if best is None or checks[-1]["mrr"] > best[0]:
            best = (checks[-1]["mrr"], {k: v.detach().clone() for k, v in model.state_dict().items()})

    if validate and schedule.score_untrained:
        check(0)
    order, curve, window = [], [], []
    for step in range(1, schedule.steps + 1):
        while len(order) < schedule.batch:  # a small home's split may be smaller than a batch
            order += rng.sample(range(len(items)), len(items))
        batch = [items[order.pop()] for _ in range(schedule.batch)]
        model.train()
        with numerics.autocast(precision):
            value = loss(batch, rng)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        lr.step()
        optimizer.zero_grad()
        window.append(value.item())
        if step % 10 == 0 or step == schedule.steps:
            curve.append({"step": step, "loss": round(sum(window) / len(window), 4)})
            window = []
        if validate and (step % schedule.eval_every == 0 or step == schedule.steps):
            check(step)
        if progress:
            progress(step, schedule.steps, value.item())
    if best is not None:
        model.load_state_dict(best[1])
    model.eval()
    return curve, checks


def train_once(folder: Path, record_name: str, pairs: Sequence, about: dict, validation_size: int,
               learn: Callable[[list, list], Learned], untrained: bool = False) -> dict:
    """The model `folder` holds, trained by `learn` on `pairs`' train split and the first
    `validation_size` of its validation split unless it is there already (its id, in `about`, says
    it is what this would make), then stored with its record: `about`, what the run saw and gained
    (with `untrained`, the score of the model before its first step), and when and where it ran."""
    if (folder / record_name).is_file():
        return json.loads((folder / record_name).read_text()) | {"reused": True}
    train_split = [p for p in pairs if p.split == "train"]
    validation = [p for p in pairs if p.split == "validation"][:validation_size]
    if not train_split:
        raise ValueError("no training pairs in the train split: nothing to train on")
    started = time.perf_counter()
    save, curve, checks = learn(train_split, validation)
    record = {**about, "train_pairs": len(train_split), "validation_pairs": len(validation),
              "loss_curve": curve, "validation": checks,
              **({"untrained": checks[0] if checks else None} if untrained else {}),
              "best": max(checks, key=lambda c: c["mrr"], default=None),
              "seconds": round(time.perf_counter() - started, 1), "cpu": numerics.cpu_model(),
              "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    store_model(folder, save, record_name, record)
    return record


def store_model(folder: Path, save: Callable[[Path], None], record_name: str, record: dict) -> None:
    """A trained model (`save` writes it into the folder it is given) and its record, written
    beside, then moved in whole: a half-written model is never found."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = folder.with_name(f".{folder.name}.{time.time_ns()}")
    save(work)
    (work / record_name).write_text(json.dumps(record, indent=2) + "\n")
    work.rename(folder)


def loss_curve_png(record: dict) -> bytes:
    """The training loss by step, and the validation MRR where it was scored: the plot a reader
    checks for a run that did not learn or began to overfit."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, loss_axis = plt.subplots(figsize=(7, 3.2))
    curve = record.get("loss_curve") or []
    loss_axis.plot([c["step"] for c in curve], [c["loss"] for c in curve], color="#4a6fa5", label="training loss")
    loss_axis.set_xlabel("step", fontsize=8)
    loss_axis.set_ylabel("loss", fontsize=8)
    checks = record.get("validation") or []
    if checks:
        mrr_axis = loss_axis.twinx()
        mrr_axis.plot([c["step"] for c in checks], [c["mrr"] for c in checks], "o-", color="#b33",
                      label="validation MRR")
        mrr_axis.set_ylabel("validation MRR", fontsize=8)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=90)
    plt.close(fig)
    return out.getvalue()
