"""Where training pairs are kept, and when they are made again: once per index version content
(its fingerprint), guard (the query sets and the excluded entries) and seed. The same inputs give
the same file, read back instead of mined again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lectio.index import versions
from lectio.training import pairs
from lectio.training.guard import Guard

# Bumped when the way pairs are made changes, so pairs made the old way are not reused.
PAIRS_LAYOUT = 3


def pairs_dir(home: Path) -> Path:
    return home / "training" / "pairs"


def inputs_key(version_fingerprint: str, guard: Guard, seed: int, negatives: int) -> str:
    made_of = json.dumps({"version": version_fingerprint, "queries": sorted(guard.queries),
                          "excluded": sorted(guard.excluded_sources), "seed": seed, "negatives": negatives,
                          "layout": PAIRS_LAYOUT}, sort_keys=True)
    return hashlib.sha256(made_of.encode()).hexdigest()[:16]


def pairs_of(conn, home: Path, version: str, embed: Callable[[list[str]], np.ndarray], guard: Guard,
             seed: int = pairs.SEED, negatives: int = 4) -> tuple[list[pairs.Pair], Path, bool]:
    """The pairs of `version`, made or read back; also their file and whether they were made now."""
    info = versions.get_version(conn, version)
    if info is None or info.status != "ready":
        raise ValueError(f"index version {version!r} is not ready")
    path = pairs_dir(home) / f"{inputs_key(info.fingerprint, guard, seed, negatives)}.jsonl"
    if path.is_file():
        return pairs.read(path), path, False
    made = pairs.from_version(conn, version, embed, guard, seed=seed, negatives=negatives)
    path.parent.mkdir(parents=True, exist_ok=True)
    work = path.with_suffix(".partial")
    pairs.write(made, work)
    work.rename(path)
    return made, path, True
