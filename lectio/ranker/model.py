"""A trained learned ranker in the home: models/rankers/<id>/ holds the trees (LightGBM's own text
format) and ranker.json, the record of what made them (the sets and parts it learned from, the
features by name, its seed, its cross-validated scores). The id is the trees' fingerprint, so a
home that trains alike holds the same id, and a model is read by the feature names it was
trained on: one trained before a feature was added is refused, never read by the wrong column."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import numpy as np

from lectio.ranker.features import NAMES
from lectio.registry.models import Registry

RECORD = "ranker.json"
TREES = "trees.txt"


REGISTRY = Registry("rankers", RECORD, "ranker", "lectio model rank")
models_dir, trained, find = REGISTRY.models_dir, REGISTRY.trained, REGISTRY.find


def store(home: Path, trees: str, record: dict) -> str:
    """Writes the trees and their record (the id and time added); returns the id."""
    model_id = "trees-" + hashlib.sha256(trees.encode()).hexdigest()[:12]
    folder = models_dir(home) / model_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TREES).write_text(trees)
    stamped = {**record, "id": model_id, "features": list(NAMES),
               "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    (folder / RECORD).write_text(json.dumps(stamped, indent=2))
    return model_id


@lru_cache(maxsize=4)
def loaded(folder: Path):
    """The trees of a ranker folder, loaded once per process."""
    import lightgbm

    record = json.loads((folder / RECORD).read_text())
    if tuple(record.get("features", ())) != NAMES:
        raise ValueError(f"the ranker in {folder} was trained on other features than this lectio computes: "
                         "train it again (lectio model rank)")
    return lightgbm.Booster(model_str=(folder / TREES).read_text())


def scores(folder: Path, rows: np.ndarray) -> np.ndarray:
    """The ranker's score of each row of features (higher first)."""
    if not len(rows):
        return np.zeros(0)
    return loaded(folder).predict(rows, num_threads=1)
