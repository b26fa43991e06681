"""The learned ranker's gate: a ranker is let into the live version's searches by the verdict its
training reached on the dev parts' out-of-fold orders (lectio.training.ranker.trainer.verdict),
kept on its record; scored again on the dev parts it learned from, it would be judged in sample."""

from __future__ import annotations

import json
from pathlib import Path

from lectio.ranker.model import REGISTRY
from lectio.training.gate import Verdict, Wing, keep, live

RANKER = Wing(REGISTRY, "stages.learned_rank.model", "ranker_gate")


def gate_ranker(conn, home: Path, candidate: str | None, force: bool = False) -> Verdict:
    """Make `candidate` (a trained ranker's id, "latest", or None for off) the home's learned
    ranker, by the verdict its record keeps."""
    registry, version = RANKER.registry, live(conn)
    before = version.rankers.get(RANKER.setting)
    judged = {"decision": "switch", "reason": "turned off", "metrics": {}, "differences": []}
    if candidate:
        folder = registry.find(home, candidate)
        candidate = folder.name
        judged = json.loads((folder / registry.record).read_text()).get("cross_validated") or {
            "decision": "refuse", "reason": "trained without cross-validation: nothing says it is no worse"}
    if candidate == before:
        return Verdict(before, candidate, "unchanged", f"{candidate or 'no ranker'} is already in use")
    decision = "switch" if judged["decision"] == "switch" or force else "refuse"
    verdict = Verdict(before, candidate, decision, judged["reason"], judged.get("metrics", {}),
                      judged.get("differences", []))
    keep(conn, version.version, RANKER, verdict)
    return verdict
