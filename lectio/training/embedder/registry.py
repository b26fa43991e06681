"""Where the adapted embedders are listed and found: the same Registry the rerankers and rankers
use, over the adapted models' folder (lectio.embedding.packaged.adapted_dir). Which one the home
embeds with is the live version's model (lectio.embedding.packaged.home_choice), never this
registry's: it only answers what was adapted, and which one a name means."""

from __future__ import annotations

from pathlib import Path

from lectio.embedding.packaged import ADAPTED_FOLDER, MODEL_NAME
from lectio.registry.models import Registry

RECORD = "embedder.json"
REGISTRY = Registry(ADAPTED_FOLDER, RECORD, "embedder", "lectio model adapt", made="adapted")


def trained(home: Path) -> list[dict]:
    """The records of the embedders adapted in `home`, newest first."""
    return REGISTRY.trained(home)


def chosen(home: Path, name: str) -> str:
    """The model a migration names: "base" (the packaged model), "latest" or an adapted embedder's
    id; a ValueError naming what there is otherwise."""
    return MODEL_NAME if name == "base" else REGISTRY.find(home, name).name
