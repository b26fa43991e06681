"""Turning a trained reranker on (or off) for a home's searches is a migration like any other:
the live index is scored on the labelled query sets as it is searched now and as it would be
searched with the change, and the change is made only if no guarded metric drops beyond its
tolerance and beyond noise (lectio.evaluation.migration_gate.compare, the rule every index
migration passes). A reranker reorders a page, so what it can cost is the order: every metric of
RERANKER_TOLERANCES is guarded, at no drop beyond noise at all, and a reranker goes on only when it
also gains beyond noise on at least one of them, on some set (a model that changes nothing
measurable is not worth its time per search). A refused reranker stays trained, to inspect or to overrule with --force.
The verdict is kept with the choice (the home's ACTIVE.json) and on the live version's metrics,
which `lectio index list` shows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lectio.evaluation.metrics import evaluate_index
from lectio.evaluation.migration_gate import MODEL_TOLERANCES, check_tolerances, compare
from lectio.evaluation.querysets import Query
from lectio.index import versions
from lectio.reranker.model import active, find, set_active
from lectio.retrieval.config import SearchConfig


RERANKER_TOLERANCES = MODEL_TOLERANCES


@dataclass
class RerankerVerdict:
    before: str | None  # the reranker searches used (None: none)
    candidate: str | None
    decision: str  # "switch", "refuse" or "unchanged"
    reason: str
    metrics: dict = field(default_factory=dict)
    differences: list = field(default_factory=list)

    def to_json(self) -> dict:
        return {"before": self.before, "candidate": self.candidate, "decision": self.decision, "reason": self.reason,
                "metrics": self.metrics, "differences": self.differences[:20]}


def searched_with(model: str | None) -> SearchConfig:
    return SearchConfig.from_options([f"stages.rerank.model={model or ''}"])


def gate(conn, home: Path, candidate: str | None, query_sets: Mapping[str, Sequence[Query]],
         tolerances: Mapping[str, float] = RERANKER_TOLERANCES, force: bool = False,
         require_gain: bool = True) -> RerankerVerdict:
    """Score, decide and (unless refused) make `candidate` (a trained id, "latest", or None for
    off) the home's reranker. Turning one on also needs a gain beyond noise (`require_gain`)."""
    tolerances = check_tolerances(tolerances)
    candidate = find(home, candidate).name if candidate else None
    before, live = active(home), versions.live_version(conn)
    if live is None:
        raise ValueError("no live index yet: run `lectio run` first")
    if candidate == before:
        return RerankerVerdict(before, candidate, "unchanged", f"{candidate or 'no reranker'} is already in use")
    now = {name: evaluate_index(conn, qs, config=searched_with(before)) for name, qs in query_sets.items()}
    then = {name: evaluate_index(conn, qs, config=searched_with(candidate)) for name, qs in query_sets.items()}
    metrics, differences, violations = compare(now, then, tolerances)
    gains = _gains(metrics, tolerances)
    if candidate and require_gain and not gains:
        violations.append("no guarded metric gained beyond noise on any set")
    reason = "; ".join(violations) if violations else \
        "no guarded metric lost beyond noise" + (f"; gained beyond it: {', '.join(gains)}" if gains else "")
    verdict = RerankerVerdict(before, candidate, "refuse" if violations and not force else "switch", reason, metrics,
                              differences)
    if verdict.decision == "switch":
        set_active(home, {"id": candidate, "index_version": live, "verdict": verdict.to_json(),
                          "decided_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
    versions.merge_metrics(conn, live, {"reranker_gate": verdict.to_json() | {"metrics": _overall(metrics)}})
    return verdict


def _gains(metrics: dict, guarded: Mapping[str, float]) -> list[str]:
    """The set and metric of each guarded change whose 95 % interval lies above zero."""
    return [f"{name} {metric} {row['delta']:+.4f}" for name, rows in metrics.items() for metric, row in rows.items()
            if metric in guarded and row.get("ci95") and row["ci95"][0] > 0]


def _overall(metrics: dict) -> dict:
    """Per set, each metric's before and after: what a version's record keeps of the comparison."""
    return {name: {m: [row["live"], row["candidate"]] for m, row in rows.items() if m != "n"}
            for name, rows in metrics.items()}
