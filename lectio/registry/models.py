"""The registry of one kind of trained model in a home: models/<folder>/<id>/ holds a model and
the record of what made it (its id among it). Every kind (the cross-encoder reranker, the learned
ranker, the adapted embedder) is found and listed the same way, so the CLI, the gate and the
stages read them alike; which reranker or ranker a version's searches read is that version's
record (lectio.training.gate writes it), which embedder is the version's own model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

ACTIVE = "ACTIVE.json"


@dataclass(frozen=True)
class Registry:
    folder: str  # under the home's models/
    record: str  # the record's file name in each model's folder
    what: str  # what a message calls one ("reranker")
    trains: str  # the command that trains one
    made: str = "trained"  # how a message says one came to be ("adapted" for an embedder)

    def models_dir(self, home: Path) -> Path:
        return home / "models" / self.folder

    def trained(self, home: Path) -> list[dict]:
        """The records of the models trained in `home`, newest first (a record that does not
        parse names no model a search could use, and is left out)."""
        folder, records = self.models_dir(home), []
        for path in sorted(folder.glob(f"*/{self.record}")) if folder.is_dir() else ():
            try:
                records.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
        return sorted(records, key=lambda r: str(r.get("trained_at", "")), reverse=True)

    def find(self, home: Path, model_id: str) -> Path:
        """The folder of a trained model by id ("latest" for the newest); a ValueError naming
        what there is otherwise."""
        if model_id == "latest":
            records = self.trained(home)
            if not records:
                raise ValueError(f"no {self.what} has been {self.made} in {home} ({self.trains})")
            model_id = records[0]["id"]
        folder = self.models_dir(home) / model_id
        if "/" in model_id or model_id.startswith(".") or not (folder / self.record).is_file():
            known = ", ".join(r["id"] for r in self.trained(home)) or "none"
            raise ValueError(f"no {self.made} {self.what} {model_id!r} in {home} ({self.made}: {known})")
        return folder

    def chosen_in_the_home(self, home: Path) -> str | None:
        """The model a home's file named before the choice moved onto the index versions
        (lectio.index.versions.IndexVersion.rankers): nothing searches with it, and `lectio model
        show` says how to gate it again. Not asked of the adapted embedders: theirs names the model
        the home embeds with now (lectio.embedding.packaged.home_choice)."""
        try:
            return json.loads((self.models_dir(home) / ACTIVE).read_text()).get("id")
        except (OSError, ValueError, AttributeError):
            return None
